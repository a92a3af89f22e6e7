package shell

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// The simulated phone's simpleperf, Android's profiler: `simpleperf record
// --app PKG -e cpu-clock -f HZ -g -o FILE` samples the launches of PKG
// until it gets SIGINT (kill -INT PID, pkill) or --duration passes, and
// writes FILE; `simpleperf report-sample --show-callchain -i FILE` prints
// its samples as the real one's text report does (cmd_report_sample.cpp:
// "sample:" blocks with time, event_count, the leaf's symbol and the
// callchain's, then lost_situation). The samples come from the Phone
// (Profiler): the sim app's call tree for each launch while recording.
// Phones before Android 7.0 (SDK 24), or with ro.perflab.no_simpleperf=1,
// have no simpleperf.

// Profiler is a phone whose simpleperf can sample its apps.
type Profiler interface {
	// StartProfile samples the launches of pkg, one sample per periodNs of
	// CPU time, from now until stop, which returns the samples (times on
	// the phone's uptime clock, in nanoseconds).
	StartProfile(pkg string, periodNs int64) (stop func() *lab.Profile, err error)
}

// recordMagic starts the files the simulated simpleperf record writes
// (a real perf.data starts with PERFILE2).
const recordMagic = "PERFILE2 perflab-sim\n"

// NoSimpleperf reports whether the phone lacks simpleperf: before Android
// 7.0 (ro.build.version.sdk < 24), or ro.perflab.no_simpleperf=1, or a
// Phone that cannot profile.
func (sh *Shell) NoSimpleperf() bool {
	if _, ok := sh.Phone.(Profiler); !ok || sh.Prop("ro.perflab.no_simpleperf") == "1" {
		return true
	}
	sdk, err := strconv.Atoi(sh.Prop("ro.build.version.sdk"))
	return err == nil && sdk < 24
}

// proc is a long-running command others can signal (kill, pkill): the
// simulated simpleperf record.
type proc struct {
	pid     int
	cmdline string
	sig     chan syscall.Signal // buffered: the first signal counts
}

// newPid gives a shell its process id ($$).
func (sh *Shell) newPid() int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.lastPid == 0 {
		sh.lastPid = 4242
	}
	sh.lastPid++
	return sh.lastPid
}

func (sh *Shell) addProc(p *proc) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.procs == nil {
		sh.procs = map[int]*proc{}
	}
	sh.procs[p.pid] = p
}

func (sh *Shell) removeProc(pid int) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.procs, pid)
}

// procsNamed lists the pids of the shell's processes whose program is
// name (pidof).
func (sh *Shell) procsNamed(name string) []int {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var pids []int
	for pid, p := range sh.procs {
		if prog, _, _ := strings.Cut(p.cmdline, " "); prog == name {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	return pids
}

// signal sends sig to the process pid; false when there is none.
func (sh *Shell) signal(pid int, sig syscall.Signal) bool {
	sh.mu.Lock()
	p, ok := sh.procs[pid]
	sh.mu.Unlock()
	if ok {
		select {
		case p.sig <- sig:
		default:
		}
	}
	return ok
}

// signals are the names kill and pkill take.
var signals = map[string]syscall.Signal{"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM}

// parseSignal reads "INT", "SIGINT" or "2".
func parseSignal(s string) (syscall.Signal, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		for _, sig := range signals {
			if int(sig) == n {
				return sig, true
			}
		}
		return 0, false
	}
	sig, ok := signals[strings.TrimPrefix(strings.ToUpper(s), "SIG")]
	return sig, ok
}

// cmdExec runs its command in place of the shell: the same process ($$).
func cmdExec(e *env, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		return 0
	}
	return e.exec(args[1:], stdin, stdout, stderr)
}

// cmdKill is toybox kill [-SIGNAL | -s SIGNAL] PID... for the processes the
// simulated phone runs long enough to signal.
func cmdKill(e *env, args []string, _ io.Reader, _, stderr io.Writer) int {
	sig, rest := syscall.SIGTERM, args[1:]
	if len(rest) > 1 && rest[0] == "-s" {
		rest = append([]string{"-" + rest[1]}, rest[2:]...)
	}
	if len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		s, ok := parseSignal(rest[0][1:])
		if !ok {
			fmt.Fprintf(stderr, "kill: unknown signal '%s'\n", rest[0][1:])
			return 1
		}
		sig, rest = s, rest[1:]
	}
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "kill: Need 1 argument")
		return 1
	}
	status := 0
	for _, a := range rest {
		pid, err := strconv.Atoi(a)
		if err != nil || !e.sh.signal(pid, sig) {
			fmt.Fprintf(stderr, "kill: %s: No such process\n", a)
			status = 1
		}
	}
	return status
}

// cmdSimpleperf is simpleperf's record, report-sample and --version.
func cmdSimpleperf(e *env, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(stderr, "Usage: simpleperf [common options] subcommand [args_for_subcommand]")
		return 1
	}
	switch args[1] {
	case "--version":
		fmt.Fprintln(stdout, "Simpleperf version 1.build.perflab-sim")
		return 0
	case "record":
		return simpleperfRecord(e, args[2:], stderr)
	case "report-sample":
		return simpleperfReportSample(e, args[2:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "simpleperf: the simulated phone's simpleperf knows record and report-sample, not %q\n", args[1])
	return 1
}

// spLog prints a simpleperf log line on stderr as the real one does.
func spLog(w io.Writer, level, format string, a ...any) {
	fmt.Fprintf(w, "simpleperf %s %s\n", level, fmt.Sprintf(format, a...))
}

func simpleperfRecord(e *env, args []string, stderr io.Writer) int {
	hz, app, out, event := 4000, "", "perf.data", "cpu-clock"
	var duration time.Duration
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, bool) {
			if i+1 >= len(args) {
				spLog(stderr, "E", "No argument following %s option. Try `simpleperf help record`", a)
				return "", false
			}
			i++
			return args[i], true
		}
		var v string
		var ok = true
		switch a {
		case "-g", "--no-inherit":
		case "--call-graph", "-e", "-f", "--app", "-o", "--duration":
			if v, ok = next(); !ok {
				return 1
			}
		default:
			spLog(stderr, "E", "Unknown option for record command: '%s' (the simulated simpleperf takes -e, -f, -g, --call-graph, --app, -o, --duration)", a)
			return 1
		}
		switch a {
		case "--call-graph":
			ok = v == "fp" || strings.HasPrefix(v, "dwarf")
		case "-e":
			event, ok = v, v == "cpu-clock" || v == "task-clock" || v == "cpu-clock:u" || v == "task-clock:u"
		case "-f":
			n, err := strconv.Atoi(v)
			hz, ok = n, err == nil && n > 0
		case "--app":
			app = v
		case "-o":
			out = v
		case "--duration":
			s, err := strconv.ParseFloat(v, 64)
			duration, ok = time.Duration(s*float64(time.Second)), err == nil && s > 0
		}
		if !ok {
			spLog(stderr, "E", "Invalid argument for %s: '%s'", a, v)
			return 1
		}
	}
	if app == "" {
		spLog(stderr, "E", "No target to record: the simulated simpleperf records an app (--app PACKAGE)")
		return 1
	}
	if _, err := e.sh.Phone.PackagePath(app); err != nil {
		spLog(stderr, "E", "Package %s doesn't exist", app)
		return 1
	}
	path := Clean(e.cwd, out)
	if err := e.sh.FS.WriteFile(path, nil, 0o644, e.uid, false); err != nil {
		spLog(stderr, "E", "failed to open record file '%s': %v", out, err)
		return 1
	}
	// Real simpleperf caps the rate at the kernel's limit; the simulated
	// phone samples at most every 50 µs.
	period := max(int64(time.Second)/int64(hz), 50_000)
	stop, err := e.sh.Phone.(Profiler).StartProfile(app, period)
	if err != nil {
		spLog(stderr, "E", "%v", err)
		return 1
	}
	p := &proc{pid: e.pid, cmdline: "simpleperf record " + strings.Join(args, " "), sig: make(chan syscall.Signal, 1)}
	e.sh.addProc(p)
	defer e.sh.removeProc(p.pid)
	var limit <-chan time.Time
	if duration > 0 {
		t := time.NewTimer(duration)
		defer t.Stop()
		limit = t.C
	}
	// SIGINT, SIGTERM and SIGHUP (the adb connection closing) end the
	// recording and write the file; SIGKILL loses it.
	killed := false
	select {
	case sig := <-p.sig:
		killed = sig == syscall.SIGKILL
	case <-e.ctx.Done():
	case <-limit:
	}
	prof := stop()
	if killed {
		return 128 + int(syscall.SIGKILL)
	}
	var b strings.Builder
	b.WriteString(recordMagic)
	writeReportSample(&b, prof, app, event)
	if err := e.sh.FS.WriteFile(path, []byte(b.String()), 0o644, e.uid, false); err != nil {
		spLog(stderr, "E", "failed to write record file '%s': %v", out, err)
		return 1
	}
	spLog(stderr, "I", "Samples recorded: %d. Samples lost: 0.", len(prof.Samples))
	return 0
}

func simpleperfReportSample(e *env, args []string, stdout, stderr io.Writer) int {
	in, callchain := "perf.data", false
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--show-callchain":
			callchain = true
		case "-i":
			if i+1 >= len(args) {
				spLog(stderr, "E", "No argument following -i option.")
				return 1
			}
			i++
			in = args[i]
		default:
			spLog(stderr, "E", "Unknown option for report-sample command: '%s' (the simulated simpleperf takes -i and --show-callchain)", args[i])
			return 1
		}
	}
	data, err := e.readPath(in)
	if err != nil {
		spLog(stderr, "E", "failed to open record file '%s': %v", in, err)
		return 1
	}
	report, ok := strings.CutPrefix(string(data), recordMagic)
	if !ok {
		spLog(stderr, "E", "%s is not a perf.data file", in)
		return 1
	}
	if !callchain {
		report = dropCallchains(report)
	}
	io.WriteString(stdout, report)
	return 0
}

// dropCallchains keeps each sample's leaf only (report-sample without
// --show-callchain).
func dropCallchains(report string) string {
	var b strings.Builder
	inChain := false
	for _, line := range strings.SplitAfter(report, "\n") {
		switch {
		case line == "  callchain:\n":
			inChain = true
			continue
		case !strings.HasPrefix(line, "    "):
			inChain = false
		}
		if !inChain {
			b.WriteString(line)
		}
	}
	return b.String()
}

// writeReportSample writes p as simpleperf report-sample's text report
// (cmd_report_sample.cpp, two spaces per level): meta_info, a sample block
// per sample with the leaf's symbol and the callchain's, lost_situation.
func writeReportSample(b *strings.Builder, p *lab.Profile, app, event string) {
	fmt.Fprintf(b, "meta_info:\n  trace_offcpu: false\n  event_type: %s\n  app_package_name: %s\n", event, app)
	thread := strings.TrimPrefix(app, "org.")
	if len(thread) > 15 {
		thread = thread[len(thread)-15:] // the kernel keeps a thread name's last 15 bytes here
	}
	for _, s := range p.Samples {
		fmt.Fprintf(b, "sample:\n  event_type: %s\n  time: %d\n  event_count: %d\n  thread_id: %d\n  thread_name: %s\n",
			event, s.TimeNs, p.Weight(s), 10123, thread)
		for i, fn := range s.Stack {
			ind := "  "
			if i > 0 {
				ind = "    "
			}
			if i == 1 {
				b.WriteString("  callchain:\n")
			}
			fmt.Fprintf(b, "%svaddr_in_file: %x\n%sfile: %s\n%ssymbol: %s\n", ind, sim.FuncAddr(fn), ind, sim.FuncBinary(fn, app), ind, fn)
		}
	}
	fmt.Fprintf(b, "lost_situation:\n  sample_count: %d\n  lost_count: 0\n", len(p.Samples))
}
