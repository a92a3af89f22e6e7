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
		return &trialProfiler{kind: ProfilerPerf, file: filepath.Join(tmp, fmt.Sprintf("perf-%d.data", index))}, ""
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
		prof, err = readPerfData(p.file)
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
	for _, s := range pp.Sample {
		var stack []string
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if ln.Function != nil {
					stack = append(stack, ln.Function.Name)
				}
			}
			if len(l.Line) == 0 {
				stack = append(stack, fmt.Sprintf("0x%x", l.Address))
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
		p.Samples = append(p.Samples, lab.ProfileSample{Stack: stack, TimeNs: -1, Weight: s.Value[vi], Count: n, Phase: ph})
	}
	return p
}

// readPerfData reads perf record's file through perf script.
func readPerfData(path string) (*lab.Profile, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("perf", "script", "-i", path, "-F", "time,ip,sym", "--ns")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("perf script: %v: %s", err, lastLines(strings.TrimSpace(stderr.String()), 2))
	}
	return parsePerfScript(bytes.NewReader(out))
}

// parsePerfScript parses `perf script -F time,ip,sym --ns` output: a
// header line per sample ("  1234.567890123: "), then its stack, one
// "ADDR SYMBOL" line per frame, leaf first, then a blank line. Frames
// without a symbol ("[unknown]") are kept as their address and counted in
// a note.
func parsePerfScript(r io.Reader) (*lab.Profile, error) {
	p := &lab.Profile{Source: ProfilerPerf, PeriodNs: int64(1e9 / perfRecordHz)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var cur *lab.ProfileSample
	unknown, line := 0, 0
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
			addr, sym, _ := strings.Cut(s, " ")
			sym = strings.TrimSpace(sym)
			if addr == "0" && sym == "[unknown]" {
				continue // the end of a chain the unwinder lost
			}
			if sym == "" || sym == "[unknown]" {
				unknown++
				sym = "0x" + addr
			}
			if i := strings.LastIndex(sym, "+0x"); i > 0 {
				sym = sym[:i] // symbol+offset
			}
			cur.Stack = append(cur.Stack, sym)
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(p.Samples) == 0 {
		return nil, fmt.Errorf("perf recorded no samples (a command shorter than a sampling period, %d µs?)", 1_000_000/perfRecordHz)
	}
	if unknown > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d frames without a symbol (a stripped binary?), kept as addresses", unknown))
	}
	return p, nil
}

// CanProfile: the local device profiles with perf record, or with a Go
// program's own profile (lab.Profiler); whether perf works is checked at
// the first profiled trial, which otherwise gets a note.
func (d *Device) CanProfile() (bool, string) { return true, "" }

var _ lab.Profiler = (*Device)(nil)
