package local

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/google/pprof/profile"

	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
)

// Profiles on the local device. Two profilers:
//
//   - perf (the default): the command runs under `perf record -e
//     cpu-clock:u -F 4000 -g -k CLOCK_MONOTONIC`, the software clock event
//     with call chains, which works unprivileged at
//     kernel.perf_event_paranoid ≤ 2 and without hardware counters; the
//     samples come back from `perf script`. Its own start and end (about
//     0.2–0.4 s on a small VM: it reads the kernel's symbols) fall inside
//     the trial's wall_ms and user_ms, alike in both builds;
//   - pprof ("profiler": "pprof"): a Go program writes its own CPU profile
//     to the file $PERFLAB_CPUPROFILE names (runtime/pprof's
//     StartCPUProfile; a test binary: -test.cpuprofile "$PERFLAB_CPUPROFILE"),
//     at the cost of Go's own profiler only. Its pprof labels carry over;
//     a "phase" label is the sample's phase.
//
// The app's phases come as PERFLAB_SPAN lines on stdout ("PERFLAB_SPAN
// begin PHASE NS", "PERFLAB_SPAN end PHASE NS", NS the CLOCK_MONOTONIC time
// in nanoseconds), joined to perf's samples by time (the clock perf is told
// to use). Whatever fails is a note on the trial; the trial itself goes on.

// ProfileEnv names the file a program writes its own CPU profile to when
// the experiment's profiler is pprof.
const ProfileEnv = "PERFLAB_CPUPROFILE"

// Profilers of the local device ("profiler" in the experiment file).
const (
	ProfilerPerf  = "perf"
	ProfilerPprof = "pprof"
)

// perfRecordHz is perf record's sampling rate (its own default).
const perfRecordHz = 4000

// trialProfiler profiles one trial.
type trialProfiler struct {
	kind string
	file string
	syms *elfsym.Resolver // names what perf did not
}

// perfRecordStatus says once whether perf record works here, and why not.
type perfRecordStatus struct {
	once sync.Once
	ok   bool
	why  string
}

func (s *perfRecordStatus) check() (bool, string) {
	s.once.Do(func() {
		if _, err := exec.LookPath("perf"); err != nil {
			s.why = "perf is not installed (apt-get install linux-perf); a Go program can write its own profile instead (\"profiler\": \"pprof\")"
			return
		}
		f, err := os.CreateTemp("", "perflab-perf-*.data")
		if err != nil {
			s.why = err.Error()
			return
		}
		f.Close()
		defer os.Remove(f.Name())
		out, err := exec.Command("perf", perfRecordArgs(f.Name(), "true")...).CombinedOutput()
		if err != nil {
			s.why = fmt.Sprintf("perf record failed: %v: %s", err, lastLines(strings.TrimSpace(string(out)), 2))
			if p, perr := strconv.Atoi(readTrim("/proc/sys/kernel/perf_event_paranoid")); perr == nil && p > 2 {
				s.why += fmt.Sprintf(" (kernel.perf_event_paranoid=%d; 2 allows profiling one's own processes)", p)
			}
			return
		}
		s.ok = true
	})
	return s.ok, s.why
}

// perfRecordArgs is the perf record command line around argv.
func perfRecordArgs(out string, argv ...string) []string {
	return append([]string{"record", "-e", "cpu-clock:u", "-F", strconv.Itoa(perfRecordHz), "-g", "-k", "CLOCK_MONOTONIC",
		"-B", "-N", "--no-bpf-event", "--quiet", "-o", out, "--"}, argv...)
}

// newTrialProfiler sets up trial index's profile with profiler kind, or
// says why it cannot.
func (d *Device) newTrialProfiler(kind, tmp string, index int) (*trialProfiler, string) {
	switch kind {
	case ProfilerPprof:
		return &trialProfiler{kind: kind, file: filepath.Join(tmp, fmt.Sprintf("cpu-%d.pprof", index))}, ""
	case "", ProfilerPerf:
		if ok, why := d.perfRecord.check(); !ok {
			return nil, why
		}
		return &trialProfiler{kind: ProfilerPerf, file: filepath.Join(tmp, fmt.Sprintf("perf-%d.data", index)), syms: &d.syms}, ""
	}
	return nil, fmt.Sprintf("profiler %q: want perf or pprof", kind)
}

// wrap puts the command under perf record (perf), or names the profile's
// file in its environment (pprof).
func (p *trialProfiler) wrap(argv, env []string) ([]string, []string) {
	if p == nil {
		return argv, env
	}
	if p.kind == ProfilerPprof {
		return argv, append(env, ProfileEnv+"="+p.file)
	}
	return append([]string{"perf"}, perfRecordArgs(p.file, argv...)...), env
}

// collect reads the trial's profile, with the app's spans, and removes
// its file; the note says what was lost.
// With perf, commandNs is the command's own wall time as perf saw it,
// from its exec to its exit, perf's own start-up and end left out (0 when
// perf does not say).
func (p *trialProfiler) collect(spans []lab.Span) (prof *lab.Profile, note string, commandNs int64) {
	if p == nil {
		return nil, "", 0
	}
	defer os.Remove(p.file)
	var err error
	switch p.kind {
	case ProfilerPprof:
		prof, err = readPprofFile(p.file)
	default:
		prof, err = readPerfData(p.file, p.syms)
		if err == nil {
			commandNs = perfCommandNs(p.file)
		}
	}
	if err != nil {
		return nil, err.Error(), 0
	}
	prof.Spans = append(prof.Spans, spans...)
	return prof, strings.Join(prof.Notes, "; "), commandNs
}

// perfCommandNs is the time from the first exec perf recorded (the
// command perf started) to that process's exit, from its task events; 0
// when they are not there.
func perfCommandNs(path string) int64 {
	out, err := exec.Command("perf", "script", "-i", path, "--show-task-events", "-F", "pid,tid,time,event", "--ns").Output()
	if err != nil {
		return 0
	}
	return taskEventsSpan(string(out))
}

// taskEventsSpan reads perf script's task event lines ("PID/TID TIME:
// PERF_RECORD_COMM exec: ..." and "PERF_RECORD_EXIT(PID:TID)...") and
// returns the first exec's process's lifetime in nanoseconds.
func taskEventsSpan(out string) int64 {
	var pid string
	var start, end float64
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.Contains(line, "PERF_RECORD_") {
			continue
		}
		ids := strings.SplitN(f[0], "/", 2)
		t, err := strconv.ParseFloat(strings.TrimSuffix(f[1], ":"), 64)
		if err != nil || len(ids) != 2 {
			continue
		}
		switch {
		case pid == "" && strings.Contains(line, "PERF_RECORD_COMM exec"):
			pid, start = ids[0], t
		case pid != "" && ids[0] == pid && ids[1] == pid && strings.Contains(line, "PERF_RECORD_EXIT"):
			end = t
		}
	}
	if pid == "" || end <= start {
		return 0
	}
	return int64((end - start) * 1e9)
}

// readPprofFile reads a Go program's CPU profile.
func readPprofFile(path string) (*lab.Profile, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("the program wrote no profile to $%s (%s)", ProfileEnv, path)
	}
	if err != nil {
		return nil, err
	}
	pp, err := profile.ParseData(data)
	if err != nil {
		return nil, fmt.Errorf("$%s: not a pprof profile: %v", ProfileEnv, err)
	}
	return fromPprof(pp), nil
}

// fromPprof turns a pprof CPU profile into samples: each sample's stack
// (inlined frames too, innermost first), its CPU nanoseconds, and its
// "phase" label as its phase. It has no times: spans cannot be joined.
func fromPprof(pp *profile.Profile) *lab.Profile {
	p := &lab.Profile{Source: ProfilerPprof, PeriodNs: pp.Period}
	vi, ci := len(pp.SampleType)-1, -1
	for i, st := range pp.SampleType {
		switch st.Unit {
		case "nanoseconds":
			vi = i
		case "count":
			ci = i
		}
	}
	mi := map[*profile.Mapping]int{}
	for _, m := range pp.Mapping {
		p.Mappings = append(p.Mappings, lab.Mapping{Start: m.Start, Limit: m.Limit, Offset: m.Offset, File: m.File, BuildID: m.BuildID, Symbolized: m.HasFunctions})
		mi[m] = len(p.Mappings)
	}
	for _, s := range pp.Sample {
		var stack []string
		var frames []lab.Frame
		for _, l := range s.Location {
			fr := lab.Frame{Addr: l.Address, Mapping: mi[l.Mapping]}
			for _, ln := range l.Line {
				if ln.Function != nil {
					stack = append(stack, ln.Function.Name)
					frames = append(frames, fr)
				}
			}
			if len(l.Line) == 0 {
				file := ""
				if l.Mapping != nil {
					file = l.Mapping.File
				}
				stack = append(stack, elfsym.Unknown(file, l.Address))
				frames = append(frames, fr)
			}
		}
		if len(stack) == 0 || vi < 0 || vi >= len(s.Value) || s.Value[vi] <= 0 {
			continue
		}
		ph := ""
		if v := s.Label["phase"]; len(v) > 0 {
			ph = v[0]
		}
		n := int64(1)
		if ci >= 0 && ci < len(s.Value) {
			n = max(1, s.Value[ci])
		}
		p.Samples = append(p.Samples, lab.ProfileSample{Stack: stack, Frames: frames, TimeNs: -1, Weight: s.Value[vi], Count: n, Phase: ph})
	}
	return p
}

// readPerfData reads perf record's file through perf script: the
// samples' times and stacks with each frame's binary (dso), and the
// binaries' mappings (--show-mmap-events); res names what perf did not.
func readPerfData(path string, res *elfsym.Resolver) (*lab.Profile, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("perf", "script", "-i", path, "-F", "time,ip,sym,symoff,dso", "--ns", "--show-mmap-events")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("perf script: %v: %s", err, lastLines(strings.TrimSpace(stderr.String()), 2))
	}
	return parsePerfScript(bytes.NewReader(out), res)
}

// perfMaps are the executable mappings perf's mmap events gave, by file;
// a frame's mapping is its file's latest.
type perfMaps struct {
	list   []lab.Mapping
	byFile map[string]int // 1-based index into list
	named  map[int]bool   // mappings with an unnamed frame: false
}

// parseMmap reads a PERF_RECORD_MMAP or MMAP2 line ("... [0xSTART(0xLEN)
// @ PGOFF ...]: PROT PATH"), keeping executable ones.
func (m *perfMaps) parseMmap(s string) {
	i := strings.IndexByte(s, '[')
	j := strings.LastIndex(s, "]: ")
	if i < 0 || j < i {
		return
	}
	inner, rest := s[i+1:j], strings.Fields(s[j+3:])
	if len(rest) < 2 || !strings.Contains(rest[0], "x") {
		return
	}
	file := strings.Join(rest[1:], " ")
	var start, size, off uint64
	addr, tail, ok := strings.Cut(inner, "(")
	if !ok {
		return
	}
	sz, tail, _ := strings.Cut(tail, ")")
	_, pg, _ := strings.Cut(tail, "@ ")
	pg, _, _ = strings.Cut(strings.TrimSpace(pg), " ")
	var err1, err2, err3 error
	start, err1 = strconv.ParseUint(strings.TrimPrefix(addr, "0x"), 16, 64)
	size, err2 = strconv.ParseUint(strings.TrimPrefix(sz, "0x"), 16, 64)
	off, err3 = strconv.ParseUint(strings.TrimPrefix(pg, "0x"), 16, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return
	}
	m.list = append(m.list, lab.Mapping{Start: start, Limit: start + size, Offset: off, File: file})
	m.byFile[file] = len(m.list)
}

// parsePerfScript parses `perf script -F time,ip,sym,symoff,dso --ns
// --show-mmap-events` output: mmap event lines, and per sample a header
// line ("  1234.567890123: "), its stack, one "ADDR SYMBOL+OFF (DSO)"
// line per frame, leaf first, then a blank line. ADDR is the offset in
// the DSO's file. A frame perf did not name is named from the binary's
// symbols or its debug file (res), else BINARY+0xADDR; every frame of a
// mapped binary keeps its address and mapping. Frames with neither a
// symbol nor a binary (a frame-pointer unwinder's garbage) are dropped
// and counted in a note.
func parsePerfScript(r io.Reader, res *elfsym.Resolver) (*lab.Profile, error) {
	if res == nil {
		res = &elfsym.Resolver{}
	}
	p := &lab.Profile{Source: ProfilerPerf, PeriodNs: int64(1e9 / perfRecordHz)}
	maps := &perfMaps{byFile: map[string]int{}, named: map[int]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var cur *lab.ProfileSample
	named, unknown, lost, line := 0, 0, 0, 0
	flush := func() {
		if cur != nil && len(cur.Stack) > 0 {
			p.Samples = append(p.Samples, *cur)
		}
		cur = nil
	}
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		switch {
		case s == "":
			flush()
		case cur == nil && strings.Contains(s, "PERF_RECORD_MMAP"):
			maps.parseMmap(s)
		case cur == nil && strings.Contains(s, "PERF_RECORD_"):
			// other side-band events
		case cur == nil:
			t, ok := strings.CutSuffix(s, ":")
			if !ok {
				return nil, fmt.Errorf("perf script line %d: want a sample's time, got %q", line, s)
			}
			sec, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
			if err != nil {
				return nil, fmt.Errorf("perf script line %d: time %q: %v", line, t, err)
			}
			cur = &lab.ProfileSample{TimeNs: int64(sec * 1e9)}
		default:
			addrText, rest, _ := strings.Cut(s, " ")
			rest = strings.TrimSpace(rest)
			dso := ""
			if strings.HasSuffix(rest, ")") {
				if i := strings.LastIndex(rest, " ("); i >= 0 {
					dso, rest = rest[i+2:len(rest)-1], strings.TrimSpace(rest[:i])
				} else if strings.HasPrefix(rest, "(") {
					dso, rest = rest[1:len(rest)-1], ""
				}
			}
			sym := rest
			if i := strings.LastIndex(sym, "+0x"); i > 0 {
				sym = sym[:i] // symbol+offset
			}
			if sym == "[unknown]" {
				sym = ""
			}
			if dso == "[unknown]" {
				dso = ""
			}
			if sym == "" && dso == "" {
				if addrText != "0" {
					lost++
				}
				continue // the end of a chain the unwinder lost, or its garbage
			}
			off, _ := strconv.ParseUint(addrText, 16, 64)
			fr := lab.Frame{Addr: off}
			mi := maps.byFile[dso]
			if mi > 0 {
				m := maps.list[mi-1]
				fr = lab.Frame{Addr: m.Start + off - m.Offset, Mapping: mi}
				if _, seen := maps.named[mi]; !seen {
					maps.named[mi] = true
				}
			}
			if sym == "" && dso != "" {
				b := res.Open(dso)
				vaddr, _ := b.Addr(off)
				if sym = b.Name(vaddr); sym != "" {
					named++
				} else {
					sym = elfsym.Unknown(dso, vaddr)
					unknown++
					if mi > 0 {
						maps.named[mi] = false
					}
				}
			}
			cur.Stack = append(cur.Stack, sym)
			cur.Frames = append(cur.Frames, fr)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(p.Samples) == 0 {
		return nil, fmt.Errorf("perf recorded no samples (a command shorter than a sampling period, %d µs?)", 1_000_000/perfRecordHz)
	}
	for i := range maps.list {
		m := &maps.list[i]
		m.Symbolized = maps.named[i+1]
		if b := res.Open(m.File); b.BuildID != "" {
			m.BuildID = b.BuildID
		}
	}
	p.Mappings = maps.list
	if named > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d frames perf did not name were named from their binaries' symbols or debug files", named))
	}
	if unknown > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d frames without a symbol (a stripped binary without its debug file?), named BINARY+0xADDRESS", unknown))
	}
	if lost > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d frames with neither a symbol nor a binary (the unwinder's guesses) dropped", lost))
	}
	return p, nil
}

// CanProfile: the local device profiles with perf record, or with a Go
// program's own profile (lab.Profiler); whether perf works is checked at
// the first profiled trial, which otherwise gets a note.
func (d *Device) CanProfile() (bool, string) { return true, "" }

var _ lab.Profiler = (*Device)(nil)
