package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab"
)

// measure runs the build's command once, wrapped as the controls ask: the
// wrapped command line, the command's run, then its metrics (the device's
// own, then those the command reported) and its profile.
func (d *Device) measure(ctx context.Context, t trialSpec) lab.TrialResult {
	w, err := d.wrapCommand(t)
	defer w.remove()
	if err != nil {
		return fail(err.Error())
	}
	// Without trial_timeout the run's context alone ends the command: no
	// context of its own per trial.
	tctx := ctx
	if t.limit > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, t.limit)
		defer cancel()
	}
	c, err := d.runCommand(tctx, t, w)
	if err != nil {
		return fail(err.Error())
	}
	if res, failed := c.failure(ctx, tctx, t); failed {
		return res
	}
	var host *lab.HostLoad
	if c.started && c.hostOK {
		host = d.host.load(c.hostBefore, c.hostAfter, cpuTime(&c.st.usage))
	}
	ms, err := d.ownMetrics(t, w, c)
	if err != nil {
		return fail(err.Error())
	}
	if ms, err = t.reportedMetrics(ms, c); err != nil {
		return fail(err.Error())
	}
	res := lab.TrialResult{Status: lab.StatusOK, Metrics: ms, Host: host}
	if t.goBench() {
		res.Reason = lab.BenchFailures(c.benchOut.Bytes()) // a suite's failed benchmarks
	}
	if t.req.Profile {
		w.addProfile(&res, c.out.spans)
	}
	return res
}

// trialSpec is what runTrial hands to measure: the trial, the device's
// state for it, and the trial's environment.
type trialSpec struct {
	req     lab.TrialRequest
	exp     *lab.Experiment
	metrics []string // the metrics wanted; nil: the defaults and every reported one
	tmp     string
	srv     *metricServer
	rp      *reaper
	stdin   *os.File // the run's stdin for every command
	capt    *capture
	env     []string
	token   string
	limit   time.Duration
	groups  map[int]bool
}

// goBench reports whether the command prints go test -bench output.
func (t trialSpec) goBench() bool { return t.req.Build.Output == lab.OutputGoBench }

// want reports whether the trial records metric m.
func (t trialSpec) want(m string) bool {
	return t.metrics == nil && !t.goBench() && contains(defaultMetrics, m) || contains(t.metrics, m)
}

// commandWrap is the trial's command line as the profiler, the metrics
// and the controls wrap it, and the files its wrappers write.
type commandWrap struct {
	argv, env              []string
	prof                   *trialProfiler
	profNote               string
	perfOut, cgDir, rssOut string
}

// remove removes the files the wrappers wrote.
func (w *commandWrap) remove() {
	if w.rssOut != "" {
		os.Remove(w.rssOut)
	}
	if w.cgDir != "" {
		os.RemoveAll(w.cgDir)
	}
	if w.perfOut != "" {
		os.Remove(w.perfOut)
	}
}

// wrapCommand wraps the build's command, innermost first: perf record
// for a profile, GNU time for the peak RSS, cachegrind or perf stat for
// the instruction counts, setarch for ASLR, taskset for the pinned CPU
// (or the worker's CPUs).
func (d *Device) wrapCommand(t trialSpec) (*commandWrap, error) {
	req := t.req
	w := &commandWrap{argv: append([]string{}, req.Build.Command...), env: t.env}
	if t.want(MetricMaxRSS) && !t.want(MetricCachegrind) {
		w.rssOut = filepath.Join(t.tmp, fmt.Sprintf("rss-%d", req.Index))
		w.argv = append([]string{d.gnuTime(), "-f", "%M", "-o", w.rssOut, "--"}, w.argv...)
	}
	switch {
	case t.want(MetricCachegrind):
		cgDir := filepath.Join(t.tmp, fmt.Sprintf("cg-%d", req.Index))
		if err := os.MkdirAll(cgDir, 0o755); err != nil {
			return w, err
		}
		w.cgDir = cgDir
		w.argv = append(cachegrindArgs(cgDir), w.argv...)
	case t.want(MetricInstructions):
		w.perfOut = filepath.Join(t.tmp, fmt.Sprintf("perf-%d.csv", req.Index))
		w.argv = append([]string{"perf", "stat", "-x", ",", "-e", "instructions:u", "-o", w.perfOut, "--"}, w.argv...)
	}
	if req.Controls.ASLROff() {
		w.argv = append([]string{"setarch", "-R"}, w.argv...)
	}
	if cpu := req.Controls.PinnedCPU(); cpu >= 0 {
		w.argv = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, w.argv...)
	} else if d.cpus != "" {
		w.argv = append([]string{"taskset", "-c", d.cpus}, w.argv...)
	}
	if req.Profile {
		// Outermost: perf record attaches to the command as its sibling
		// (trialProfiler.attach), not its parent, so that the command's
		// rusage is its own; a Go program is told where to write.
		w.prof, w.profNote = d.newTrialProfiler(t.exp.Profiler, t.tmp, req.Index)
		w.argv, w.env = w.prof.wrap(w.argv, w.env)
	}
	return w, nil
}

// commandRun is what one run of the command gave: its exit, wall time and
// host load, the metric lines it sent over TCP, and its output.
type commandRun struct {
	st                    exitState
	started               bool
	err                   error // the command's failure
	wall                  time.Duration
	hostBefore, hostAfter hostMark // the host's counters around the command
	hostOK                bool
	netLines              []netLine
	refused               int // connections refused for a wrong token
	out                   *lineCollector
	benchOut              bytes.Buffer // stdout again, for go test -bench output
	errTail               string       // the end of stderr
}

// runCommand runs the wrapped command under tctx, ends what it left in its
// process group, and reads its output; the error is the device's (the
// command's own failure is in commandRun.err).
func (d *Device) runCommand(tctx context.Context, t trialSpec, w *commandWrap) (*commandRun, error) {
	// runDirect, not os/exec (see spawn.go). Cancellation and
	// trial_timeout are watched by d.kill's context.AfterFunc, not a
	// goroutine: one for a whole run without trial_timeout.
	path, err := d.lookCommand(w.argv[0])
	if err != nil {
		return nil, err
	}
	d.kill.watch(tctx)
	conns := t.srv.begin(t.token)
	pid := 0
	c := &commandRun{out: &lineCollector{}}
	// What else the host does during the command (outside its wall time).
	c.hostBefore, c.hostOK = d.host.mark()
	start := time.Now()
	capt := t.capt
	c.st, c.started, c.err = t.rp.runDirect(path, w.argv, w.env, t.req.Build.Dir, [3]*os.File{capt.stdin, capt.stdout, capt.stderr}, func(pgid int) {
		pid = pgid
		t.groups[pgid] = true
		t.req.TrialUnderWay() // waking the views overlaps the command, not the gap between trials
		// Cancellation and trial_timeout kill the whole process group.
		d.kill.set(tctx, pgid)
		if w.prof.attach(pgid) && c.hostOK {
			// The host's counters from the gate's opening: perf's start is
			// no other work during the command.
			c.hostBefore, c.hostOK = d.host.mark()
		}
	})
	end := time.Now()
	c.wall = end.Sub(start) // the command's time, not the bookkeeping below
	if ps := w.prof.sibling(); ps != nil && !ps.released.IsZero() {
		c.wall = end.Sub(ps.released) // from the gate's opening: perf's start is not the command's
	}
	w.prof.finish()
	if c.hostOK {
		c.hostAfter, c.hostOK = d.host.mark()
	}
	d.kill.clear()
	if pid != 0 {
		// Processes the command left behind in its group would disturb
		// later trials: end them now (others, in sessions of their own,
		// after cleanup; see reaper).
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	if c.err == nil && c.started {
		c.err = c.st.err()
	}
	c.netLines, c.refused = conns.finish()
	if !capt.empty() {
		var out io.Writer = c.out
		if t.goBench() {
			out = io.MultiWriter(c.out, &c.benchOut)
		}
		if err := capt.copyStdout(out); err != nil {
			return nil, fmt.Errorf("reading stdout: %w", err)
		}
		c.out.flush()
		c.errTail = capt.stderrTail(2048)
	}
	return c, nil
}

// failure is the trial's result when the command did not complete: past
// trial_timeout (even if the command got through before the context's
// timer fired, late on a loaded host), cancelled, or failed with the end
// of its stderr.
func (c *commandRun) failure(ctx, tctx context.Context, t trialSpec) (lab.TrialResult, bool) {
	dl, hasDL := tctx.Deadline()
	if t.limit > 0 && ctx.Err() == nil && (tctx.Err() == context.DeadlineExceeded || hasDL && !time.Now().Before(dl)) {
		return lab.TrialResult{Status: lab.StatusTimeout, Reason: fmt.Sprintf("exceeded trial_timeout of %gs", t.exp.TrialTimeout), Metrics: []lab.Metric{}}, true
	}
	if ctx.Err() != nil {
		return fail("cancelled"), true
	}
	if c.err != nil {
		reason := c.err.Error() // "exit status 1", "signal: killed", as os/exec says it
		if tail := strings.TrimSpace(c.errTail); tail != "" {
			reason += ": " + lastLines(tail, 3)
		}
		return fail(reason), true
	}
	return lab.TrialResult{}, false
}

// ownMetrics are the device's own measurements of the command: its wall,
// user and system time (not under cachegrind), then what the wrappers
// wrote.
func (d *Device) ownMetrics(t trialSpec, w *commandWrap, c *commandRun) ([]lab.Metric, error) {
	var ms []lab.Metric
	if c.started && w.cgDir == "" {
		ru := &c.st.usage
		add := func(name string, v float64, unit string) {
			if t.want(name) {
				ms = append(ms, lab.Metric{Name: name, Value: v, Unit: unit, Better: "lower"})
			}
		}
		add(MetricWall, float64(c.wall.Nanoseconds())/1e6, "ms")
		add(MetricUser, float64(time.Duration(ru.Utime.Nano()).Nanoseconds())/1e6, "ms")
		add(MetricSys, float64(time.Duration(ru.Stime.Nano()).Nanoseconds())/1e6, "ms")
	}
	if w.rssOut != "" {
		kb, err := readGNUTimeRSS(w.rssOut)
		if err != nil {
			return nil, fmt.Errorf("max_rss_kb: %w", err)
		}
		ms = append(ms, lab.Metric{Name: MetricMaxRSS, Value: kb, Unit: "kB", Better: "lower"})
	}
	if w.perfOut != "" {
		n, err := readPerfInstructions(w.perfOut)
		if err != nil {
			return nil, fmt.Errorf("instructions: %w", err)
		}
		ms = append(ms, lab.Metric{Name: MetricInstructions, Value: n, Unit: "instructions", Better: "lower"})
	}
	if w.cgDir != "" {
		cost, err := readCachegrind(w.cgDir)
		if err != nil {
			return nil, fmt.Errorf("cachegrind: %w", err)
		}
		ms = append(ms, lab.Metric{Name: MetricCachegrind, Value: cost, Unit: "cycles", Better: "lower"})
	}
	return ms, nil
}

// reportedMetrics adds to ms the metrics the command reported (on stdout,
// as go test -bench output, over TCP), refusing the device's own names and
// a metric reported twice, and checks that every requested metric came,
// in the order requested.
func (t trialSpec) reportedMetrics(ms []lab.Metric, c *commandRun) ([]lab.Metric, error) {
	if c.out.err != nil {
		return nil, c.out.err
	}
	reported := c.out.metrics
	if t.goBench() {
		bm, _, err := lab.SuiteMetrics(c.benchOut.Bytes())
		if err != nil {
			return nil, err
		}
		if t.req.Build.Bench != nil {
			bm = lab.QualifySuiteMetrics(bm, c.benchOut.Bytes())
		}
		reported = append(reported, bm...)
	}
	for _, l := range c.netLines {
		if l.err != nil {
			return nil, fmt.Errorf("%s line %d: %v", lab.MetricsAddrEnv, l.n, l.err)
		}
		reported = append(reported, l.m)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.Name] = true
	}
	for _, m := range reported {
		if builtin(m.Name) {
			return nil, fmt.Errorf("reported metric %s: name reserved for the local device's own measurement", m.Name)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("metric %s reported twice in one trial", m.Name)
		}
		seen[m.Name] = true
		if t.metrics == nil || contains(t.metrics, m.Name) {
			if m.Better == "" {
				m.Better = "lower"
			}
			ms = append(ms, m)
		}
	}
	for _, m := range t.metrics {
		if !seen[m] {
			reason := fmt.Sprintf("requested metric %s was not reported (print \"%s %s=VALUE\" on stdout or to %s)", m, lab.MetricPrefix, m, lab.MetricsAddrEnv)
			if c.refused > 0 {
				reason += fmt.Sprintf("; %d connection(s) to %s were refused: their first line was not this trial's %s", c.refused, lab.MetricsAddrEnv, lab.MetricsTokenEnv)
			}
			return nil, errors.New(reason)
		}
	}
	if t.metrics != nil {
		sort.SliceStable(ms, func(i, j int) bool { return indexOf(t.metrics, ms[i].Name) < indexOf(t.metrics, ms[j].Name) })
	}
	if ms == nil {
		ms = []lab.Metric{}
	}
	return ms, nil
}

// addProfile adds the trial's profile (or why there is none) to res.
func (w *commandWrap) addProfile(res *lab.TrialResult, spans []lab.Span) {
	res.Profile, res.ProfileNote = w.prof.collect(spans)
	if w.profNote != "" {
		res.ProfileNote = w.profNote
	}
}
