package local

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perflab/perflab/internal/elfsym"
	"github.com/perflab/perflab/lab"
)

// Profiles on the local device. Two profilers:
//
//   - perf (the default): `perf record -e cpu-clock:u -F 4000 -g -k
//     CLOCK_MONOTONIC`, the software clock event with call chains, which
//     works unprivileged at kernel.perf_event_paranoid ≤ 2 and without
//     hardware counters, attached to the command (-p) as its sibling, not
//     its parent (perfSibling): perf's own start and end (about 0.2–0.4 s
//     on a small VM) and its CPU time and memory stay out of the trial's
//     wall_ms, user_ms, sys_ms and max_rss_kb. The samples come back from
//     `perf script` with each frame's binary and its mappings;
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
	perf *perfSibling     // perf record attached to the command
}

// perfSibling is perf record attached to the trial's command (-p PID)
// rather than its parent: perflab starts the command behind a gate (sh
// blocked reading a FIFO), starts perf on its process with the events
// disabled (-D -1), enables them through perf's control FIFO, and opens
// the gate when perf acknowledges. The command's wait4 rusage (user_ms,
// sys_ms) and GNU time's peak RSS are then the command's own, perf's CPU
// time and memory not in them; wall_ms runs from the gate's opening, so
// perf's own start and end are not in it either. perf follows the
// command's children (inherit) and ends when it exits.
type perfSibling struct {
	gate, ctl, ack string   // FIFOs
	gateW          *os.File // perflab's end of the gate
	cmd            *exec.Cmd
	stderr         bytes.Buffer
	done           chan error
	note           string    // why the trial has no profile
	released       time.Time // when the command went on
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
		// Attaching to the command needs --control and -D -1 (perf 5.10).
		help, _ := exec.Command("perf", "record", "-h").CombinedOutput()
		if !bytes.Contains(help, []byte("--control")) {
			s.why = "this perf record has no --control (perf 5.10 or later attaches to the command with its events enabled on cue)"
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
		tp := &trialProfiler{kind: ProfilerPerf, file: filepath.Join(tmp, fmt.Sprintf("perf-%d.data", index)), syms: &d.syms}
		ps := &perfSibling{}
		for _, f := range []struct {
			p    *string
			name string
		}{{&ps.gate, "gate"}, {&ps.ctl, "ctl"}, {&ps.ack, "ack"}} {
			*f.p = filepath.Join(tmp, fmt.Sprintf("perf-%d.%s", index, f.name))
			if err := syscall.Mkfifo(*f.p, 0o600); err != nil {
				ps.remove()
				return nil, "perf record: " + err.Error()
			}
		}
		gw, err := os.OpenFile(ps.gate, os.O_RDWR, 0) // a writer already: the command's open does not block
		if err != nil {
			ps.remove()
			return nil, "perf record: " + err.Error()
		}
		ps.gateW = gw
		tp.perf = ps
		return tp, ""
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
	// The gate: the command waits until perf is attached to it.
	return append([]string{"sh", "-c", `read _ < "$0"; exec "$@"`, p.perf.gate}, argv...), env
}

// perfGateTimeout bounds the wait for perf record to attach; the
// command then goes on unprofiled.
const perfGateTimeout = 30 * time.Second

// attach starts perf record on the gated command pid, waits until its
// events are enabled, and opens the gate; whatever fails, the gate opens
// and the note says why the trial has no profile. It reports whether
// there was a gate to open.
func (p *trialProfiler) attach(pid int) bool {
	if p == nil || p.perf == nil {
		return false
	}
	ps := p.perf
	defer func() {
		ps.gateW.Write([]byte("go\n"))
		ps.gateW.Close()
		ps.released = time.Now()
	}()
	ctl, err := os.OpenFile(ps.ctl, os.O_RDWR, 0)
	if err != nil {
		ps.note = "perf record: " + err.Error()
		return true
	}
	defer ctl.Close()
	ack, err := os.OpenFile(ps.ack, os.O_RDWR, 0)
	if err != nil {
		ps.note = "perf record: " + err.Error()
		return true
	}
	defer ack.Close()
	args := perfRecordArgs(p.file)
	args = append(args[:len(args)-1], "-p", strconv.Itoa(pid), "-D", "-1", "--control", "fifo:"+ps.ctl+","+ps.ack)
	ps.cmd = exec.Command("perf", args...)
	ps.cmd.Stderr = &ps.stderr
	ps.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := ps.cmd.Start(); err != nil {
		ps.note, ps.cmd = "perf record: "+err.Error(), nil
		return true
	}
	ps.done = make(chan error, 1)
	go func() { ps.done <- ps.cmd.Wait() }()
	ctl.Write([]byte("enable\n"))
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 16)
		n, _ := ack.Read(b)
		got <- string(b[:n])
	}()
	select {
	case a := <-got:
		if !strings.HasPrefix(a, "ack") {
			ps.note = fmt.Sprintf("perf record did not acknowledge (%q)", a)
		}
	case err := <-ps.done:
		ps.done <- err
		ps.note = fmt.Sprintf("perf record ended before the command started: %v: %s", err, lastLines(strings.TrimSpace(ps.stderr.String()), 2))
	case <-time.After(perfGateTimeout):
		ps.note = fmt.Sprintf("perf record did not attach within %v", perfGateTimeout)
	}
	if ps.note != "" {
		ack.Close() // ends the reader
	}
	return true
}

// finish waits for perf record to end after the command (it ends when
// the command does), interrupting it if it does not.
func (p *trialProfiler) finish() {
	if p == nil || p.perf == nil {
		return
	}
	ps := p.perf
	if ps.gateW != nil && ps.released.IsZero() {
		ps.gateW.Close() // the command never started
	}
	if ps.cmd != nil && ps.done != nil {
		select {
		case err := <-ps.done:
			if err != nil && ps.note == "" {
				ps.note = fmt.Sprintf("perf record: %v: %s", err, lastLines(strings.TrimSpace(ps.stderr.String()), 2))
			}
		case <-time.After(5 * time.Second):
			ps.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-ps.done:
			case <-time.After(5 * time.Second):
				ps.cmd.Process.Kill()
				<-ps.done
			}
		}
	}
	ps.remove()
}

// remove removes the FIFOs.
func (ps *perfSibling) remove() {
	for _, f := range []string{ps.gate, ps.ctl, ps.ack} {
		if f != "" {
			os.Remove(f)
		}
	}
}

// collect reads the trial's profile, with the app's spans, and removes
// its file; the note says what was lost.
func (p *trialProfiler) collect(spans []lab.Span) (prof *lab.Profile, note string) {
	if p == nil {
		return nil, ""
	}
	defer os.Remove(p.file)
	if p.perf != nil && p.perf.note != "" {
		return nil, p.perf.note
	}
	var err error
	switch p.kind {
	case ProfilerPprof:
		prof, err = readPprofFile(p.file)
	default:
		prof, err = readPerfData(p.file, p.syms)
	}
	if err != nil {
		return nil, err.Error()
	}
	prof.Spans = append(prof.Spans, spans...)
	return prof, strings.Join(prof.Notes, "; ")
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
			sym, fr, ok := maps.frame(s, res, &named, &unknown)
			if !ok {
				if addr, _, _ := strings.Cut(s, " "); addr != "0" {
					lost++
				}
				continue // the end of a chain the unwinder lost, or its garbage
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
	usedMappings(p)
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

// usedMappings keeps the mappings the samples' frames are in, the one
// with the most frames first: pprof takes the first mapping for the main
// binary (`go tool pprof BINARY PROFILE` puts BINARY there), and the
// command's own binary holds most frames.
func usedMappings(p *lab.Profile) {
	count := make([]int, len(p.Mappings)+1)
	for _, s := range p.Samples {
		for _, f := range s.Frames {
			count[f.Mapping]++
		}
	}
	var order []int // 1-based
	for i := 1; i <= len(p.Mappings); i++ {
		if count[i] > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return count[order[a]] > count[order[b]] })
	renum := make([]int, len(p.Mappings)+1)
	kept := make([]lab.Mapping, 0, len(order))
	for _, i := range order {
		kept = append(kept, p.Mappings[i-1])
		renum[i] = len(kept)
	}
	for _, s := range p.Samples {
		for j := range s.Frames {
			s.Frames[j].Mapping = renum[s.Frames[j].Mapping]
		}
	}
	p.Mappings = kept
}

// CanProfile: the local device profiles with perf record, or with a Go
// program's own profile (lab.Profiler); whether perf works is checked at
// the first profiled trial, which otherwise gets a note.
func (d *Device) CanProfile() (bool, string) { return true, "" }

var _ lab.Profiler = (*Device)(nil)

// sibling is the attached perf record, nil for none.
func (p *trialProfiler) sibling() *perfSibling {
	if p == nil {
		return nil
	}
	return p.perf
}
