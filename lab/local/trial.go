package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/perflab/perflab/lab"
)

// cleanupTimeout bounds the cleanup commands of a trial.
const cleanupTimeout = 60 * time.Second

// runTrial restores state_dir, runs the prepare commands, the build's
// command and the cleanup commands, and measures the command. RunTrial
// (proxy.go) wraps it with the record/replay proxy.
func (d *Device) runTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	// One trial at a time per device: concurrent trials would disturb each
	// other's measurements, and leftovers are ended per run.
	d.trialMu.Lock()
	defer d.trialMu.Unlock()
	d.mu.Lock()
	exp, metrics, tmp, srv, env, rp, stdin := d.exp, d.metrics, d.tmp, d.srv, d.env[req.BuildKey], d.reaper, d.stdin
	d.mu.Unlock()
	if exp == nil || srv == nil || rp == nil {
		return fail("device not set up (Setup was not called or failed)")
	}
	c := req.Controls
	if err := d.checkControls(c); err != nil {
		return fail(err.Error())
	}
	if len(req.Metrics) > 0 || c.Cachegrind {
		m, err := d.checkMetrics(req.Metrics, c)
		if err != nil {
			return fail(err.Error())
		}
		metrics = m
	}
	if env == nil { // a build Setup did not see
		var err error
		if env, err = spawnEnv(buildEnv(req.Build, srv.addr(), rp.env())); err != nil {
			return fail("exec: " + err.Error())
		}
	}
	token := randomHex(16)
	trialEnv := append(env[:len(env):len(env)],
		"PERFLAB_ARM="+req.Arm,
		"PERFLAB_TRIAL="+strconv.Itoa(req.Index),
		"PERFLAB_WARMUP="+strconv.FormatBool(req.Warmup),
		lab.MetricsTokenEnv+"="+token,
	)
	// The process groups of this trial's commands, whose zombies are
	// reaped with its leftovers.
	groups := map[int]bool{}
	capt, err := d.takeCapture(stdin)
	if err != nil {
		return fail("output capture: " + err.Error())
	}
	defer func() {
		// The capture files may serve the next trial only if nothing
		// written to them, and no process of this trial is left that could.
		if rp.endLeftovers(groups) && !capt.written {
			d.mu.Lock()
			if d.spare == nil {
				d.spare, capt = capt, nil
			}
			d.mu.Unlock()
		}
		if capt != nil {
			capt.close()
		}
	}()
	limit := trialLimit(exp.TrialTimeout)

	// Reset procedure.
	if c.StateDir != "" || len(c.Prepare) > 0 {
		req.TrialUnderWay() // it may take a while: let the views see the last trial now
	}
	if c.StateDir != "" {
		snap, err := d.snapshot(c.StateDir)
		if err != nil {
			return fail(err.Error())
		}
		if err := restoreDir(snap, c.StateDir); err != nil {
			return fail(fmt.Sprintf("restoring state_dir %s: %v", c.StateDir, err))
		}
	}
	if len(c.Prepare) > 0 {
		// The prepare commands together get trial_timeout.
		pctx, cancel := withLimit(ctx, limit)
		for i, p := range c.Prepare {
			if err := d.runHook(pctx, rp, p, req.Build.Dir, trialEnv, stdin, groups); err != nil {
				cancel()
				if pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
					return lab.TrialResult{Status: lab.StatusTimeout, Reason: fmt.Sprintf("prepare[%d] %q: exceeded trial_timeout of %gs", i, p, exp.TrialTimeout), Metrics: []lab.Metric{}}
				}
				return fail(fmt.Sprintf("prepare[%d] %q: %v", i, p, err))
			}
		}
		cancel()
	}

	res := d.measure(ctx, req, exp, metrics, tmp, srv, rp, capt, trialEnv, token, limit, groups)

	// Cleanup runs even when the run is being cancelled: it may have to
	// stop what prepare started. It gets its own time limit instead:
	// trial_timeout, or cleanupTimeout without one.
	if len(c.Cleanup) > 0 {
		climit := limit
		if climit == 0 {
			climit = cleanupTimeout
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), climit)
		defer cancel()
		for i, p := range c.Cleanup {
			err := d.runHook(cctx, rp, p, req.Build.Dir, trialEnv, stdin, groups)
			if err == nil || res.Status != lab.StatusOK {
				continue
			}
			res.Status = lab.StatusFailed
			res.Reason = fmt.Sprintf("cleanup[%d] %q: %v", i, p, err)
			if cctx.Err() == context.DeadlineExceeded {
				res.Reason = fmt.Sprintf("cleanup[%d] %q: exceeded its limit of %v", i, p, climit)
				if limit > 0 {
					res.Status = lab.StatusTimeout
					res.Reason = fmt.Sprintf("cleanup[%d] %q: exceeded trial_timeout of %gs", i, p, exp.TrialTimeout)
				}
			}
		}
	}
	return res
}

// trialLimit converts trial_timeout (seconds, 0 = none) to a duration,
// saturating instead of overflowing.
func trialLimit(seconds float64) time.Duration {
	switch {
	case seconds <= 0:
		return 0
	case seconds >= float64(math.MaxInt64)/float64(time.Second):
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(seconds * float64(time.Second))
}

// withLimit is context.WithTimeout, or no deadline for limit 0.
func withLimit(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	if limit <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, limit)
}

func fail(reason string) lab.TrialResult {
	return lab.TrialResult{Status: lab.StatusFailed, Reason: reason, Metrics: []lab.Metric{}}
}

// measure runs the build's command once, wrapped as the controls ask.
func (d *Device) measure(ctx context.Context, req lab.TrialRequest, exp *lab.Experiment, metrics []string, tmp string, srv *metricServer, rp *reaper, capt *capture, env []string, token string, limit time.Duration, groups map[int]bool) lab.TrialResult {
	gobench := req.Build.Output == lab.OutputGoBench
	want := func(m string) bool {
		return metrics == nil && !gobench && contains(defaultMetrics, m) || contains(metrics, m)
	}
	argv := append([]string{}, req.Build.Command...)
	var prof *trialProfiler
	var profNote string
	if req.Profile {
		// Innermost: perf record samples the command alone.
		prof, profNote = d.newTrialProfiler(exp.Profiler, tmp, req.Index)
		argv, env = prof.wrap(argv, env)
	}
	var perfOut, cgDir, rssOut string
	if want(MetricMaxRSS) && !want(MetricCachegrind) {
		rssOut = filepath.Join(tmp, fmt.Sprintf("rss-%d", req.Index))
		defer os.Remove(rssOut)
		argv = append([]string{d.gnuTime(), "-f", "%M", "-o", rssOut, "--"}, argv...)
	}
	switch {
	case want(MetricCachegrind):
		cgDir = filepath.Join(tmp, fmt.Sprintf("cg-%d", req.Index))
		if err := os.MkdirAll(cgDir, 0o755); err != nil {
			return fail(err.Error())
		}
		defer os.RemoveAll(cgDir)
		argv = append(cachegrindArgs(cgDir), argv...)
	case want(MetricInstructions):
		perfOut = filepath.Join(tmp, fmt.Sprintf("perf-%d.csv", req.Index))
		defer os.Remove(perfOut)
		argv = append([]string{"perf", "stat", "-x", ",", "-e", "instructions:u", "-o", perfOut, "--"}, argv...)
	}
	if req.Controls.ASLROff() {
		argv = append([]string{"setarch", "-R"}, argv...)
	}
	if cpu := req.Controls.PinnedCPU(); cpu >= 0 {
		argv = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
	} else if d.cpus != "" {
		argv = append([]string{"taskset", "-c", d.cpus}, argv...)
	}

	// Without trial_timeout the run's context alone ends the command: no
	// context of its own per trial.
	tctx := ctx
	if limit > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	// runDirect, not os/exec (see spawn.go). Cancellation and
	// trial_timeout are watched by d.kill's context.AfterFunc, not a
	// goroutine: one for a whole run without trial_timeout.
	path, err := d.lookCommand(argv[0])
	if err != nil {
		return fail(err.Error())
	}

	d.kill.watch(tctx)
	conns := srv.begin(token)
	pid := 0
	// What else the host does during the command (outside its wall time).
	hostBefore, hostOK := d.host.mark()
	start := time.Now()
	st, started, err := rp.runDirect(path, argv, env, req.Build.Dir, [3]*os.File{capt.stdin, capt.stdout, capt.stderr}, func(pgid int) {
		pid = pgid
		groups[pgid] = true
		req.TrialUnderWay() // waking the views overlaps the command, not the gap between trials
		// Cancellation and trial_timeout kill the whole process group.
		d.kill.set(tctx, pgid)
	})
	wall := time.Since(start) // the command's time, not the bookkeeping below
	var hostAfter hostMark
	if hostOK {
		hostAfter, hostOK = d.host.mark()
	}
	d.kill.clear()
	if pid != 0 {
		// Processes the command left behind in its group would disturb
		// later trials: end them now (others, in sessions of their own,
		// after cleanup; see reaper).
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	if err == nil && started {
		err = st.err()
	}
	netLines, refused := conns.finish()
	out := &lineCollector{}
	var errTail string
	var benchOut bytes.Buffer
	if !capt.empty() {
		var w io.Writer = out
		if gobench {
			w = io.MultiWriter(out, &benchOut)
		}
		if cerr := capt.copyStdout(w); cerr != nil {
			return fail("reading stdout: " + cerr.Error())
		}
		out.flush()
		errTail = capt.stderrTail(2048)
	}

	// Past the deadline is a timeout even if the command got through
	// before the context's timer fired (late on a loaded host).
	dl, hasDL := tctx.Deadline()
	if limit > 0 && ctx.Err() == nil && (tctx.Err() == context.DeadlineExceeded || hasDL && !time.Now().Before(dl)) {
		return lab.TrialResult{Status: lab.StatusTimeout, Reason: fmt.Sprintf("exceeded trial_timeout of %gs", exp.TrialTimeout), Metrics: []lab.Metric{}}
	}
	if ctx.Err() != nil {
		return fail("cancelled")
	}
	if err != nil {
		reason := err.Error() // "exit status 1", "signal: killed", as os/exec says it
		if tail := strings.TrimSpace(errTail); tail != "" {
			reason += ": " + lastLines(tail, 3)
		}
		return fail(reason)
	}

	var ms []lab.Metric
	var host *lab.HostLoad
	if started && hostOK {
		host = d.host.load(hostBefore, hostAfter, cpuTime(&st.usage))
	}
	if started {
		if ru := &st.usage; cgDir == "" {
			add := func(name string, v float64, unit string) {
				if want(name) {
					ms = append(ms, lab.Metric{Name: name, Value: v, Unit: unit, Better: "lower"})
				}
			}
			add(MetricWall, float64(wall.Nanoseconds())/1e6, "ms")
			add(MetricUser, float64(time.Duration(ru.Utime.Nano()).Nanoseconds())/1e6, "ms")
			add(MetricSys, float64(time.Duration(ru.Stime.Nano()).Nanoseconds())/1e6, "ms")
		}
	}
	if rssOut != "" {
		kb, err := readGNUTimeRSS(rssOut)
		if err != nil {
			return fail("max_rss_kb: " + err.Error())
		}
		ms = append(ms, lab.Metric{Name: MetricMaxRSS, Value: kb, Unit: "kB", Better: "lower"})
	}
	if perfOut != "" {
		n, err := readPerfInstructions(perfOut)
		if err != nil {
			return fail("instructions: " + err.Error())
		}
		ms = append(ms, lab.Metric{Name: MetricInstructions, Value: n, Unit: "instructions", Better: "lower"})
	}
	if cgDir != "" {
		cost, err := readCachegrind(cgDir)
		if err != nil {
			return fail("cachegrind: " + err.Error())
		}
		ms = append(ms, lab.Metric{Name: MetricCachegrind, Value: cost, Unit: "cycles", Better: "lower"})
	}

	// Metrics the command reported, on stdout and over TCP.
	if out.err != nil {
		return fail(out.err.Error())
	}
	reported := out.metrics
	if gobench {
		bm, err := lab.GoBenchMetrics(benchOut.Bytes())
		if err != nil {
			return fail(err.Error())
		}
		reported = append(reported, bm...)
	}
	for _, l := range netLines {
		if l.err != nil {
			return fail(fmt.Sprintf("%s line %d: %v", lab.MetricsAddrEnv, l.n, l.err))
		}
		reported = append(reported, l.m)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.Name] = true
	}
	for _, m := range reported {
		if builtin(m.Name) {
			return fail(fmt.Sprintf("reported metric %s: name reserved for the local device's own measurement", m.Name))
		}
		if seen[m.Name] {
			return fail(fmt.Sprintf("metric %s reported twice in one trial", m.Name))
		}
		seen[m.Name] = true
		if metrics == nil || contains(metrics, m.Name) {
			if m.Better == "" {
				m.Better = "lower"
			}
			ms = append(ms, m)
		}
	}
	for _, m := range metrics {
		if !seen[m] {
			reason := fmt.Sprintf("requested metric %s was not reported (print \"%s %s=VALUE\" on stdout or to %s)", m, lab.MetricPrefix, m, lab.MetricsAddrEnv)
			if refused > 0 {
				reason += fmt.Sprintf("; %d connection(s) to %s were refused: their first line was not this trial's %s", refused, lab.MetricsAddrEnv, lab.MetricsTokenEnv)
			}
			return fail(reason)
		}
	}
	if metrics != nil {
		sort.SliceStable(ms, func(i, j int) bool { return indexOf(metrics, ms[i].Name) < indexOf(metrics, ms[j].Name) })
	}
	if ms == nil {
		ms = []lab.Metric{}
	}
	res := lab.TrialResult{Status: lab.StatusOK, Metrics: ms, Host: host}
	if req.Profile {
		var commandNs int64
		res.Profile, res.ProfileNote, commandNs = prof.collect(out.spans)
		if profNote != "" {
			res.ProfileNote = profNote
		}
		if commandNs > 0 {
			// perf record's own start (about 0.2 s) and end are no part
			// of the command's time.
			for i := range res.Metrics {
				if res.Metrics[i].Name == MetricWall {
					res.Metrics[i].Value = float64(commandNs) / 1e6
				}
			}
		}
	}
	return res
}

// readGNUTimeRSS reads the "%M" (peak RSS in kB) that GNU time wrote; a
// "Command exited with non-zero status" line may come first.
func readGNUTimeRSS(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("GNU time wrote nothing: %v", err)
	}
	lines := strings.Fields(strings.TrimSpace(string(b)))
	if len(lines) == 0 {
		return 0, fmt.Errorf("GNU time wrote nothing")
	}
	v, err := strconv.ParseFloat(lines[len(lines)-1], 64)
	if err != nil {
		return 0, fmt.Errorf("unreadable GNU time output %q", strings.TrimSpace(string(b)))
	}
	return v, nil
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return len(xs)
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 8192); return &b }}

// runHook runs one prepare or cleanup command with sh -c, started as trial
// commands are (runDirect: its own process group, Pdeathsig, the trial's
// environment). Its output goes to a memory file, not a pipe, so a server
// it starts in the background (holding the output open) does not keep
// perflab waiting; that server runs on until the trial's cleanup is over,
// and is then ended with the trial's other leftovers. ctx's end kills the
// hook's process group.
func (d *Device) runHook(ctx context.Context, rp *reaper, script, dir string, env []string, stdin *os.File, groups map[int]bool) error {
	sh, err := d.lookCommand("sh")
	if err != nil {
		return err
	}
	out, err := memFile("perflab-hook")
	if err != nil {
		return err
	}
	defer out.Close()
	var k groupKiller
	k.watch(ctx)
	defer k.close()
	st, started, err := rp.runDirect(sh, []string{"sh", "-c", script}, env, dir, [3]*os.File{stdin, out, out}, func(pgid int) {
		groups[pgid] = true
		k.set(ctx, pgid)
	})
	k.clear()
	if err == nil && started {
		err = st.err()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	st2, _ := out.Stat()
	size := int64(0)
	if st2 != nil {
		size = st2.Size()
	}
	b := make([]byte, min(size, 1024))
	n, _ := out.ReadAt(b, size-int64(len(b)))
	if t := strings.TrimSpace(string(b[:n])); t != "" {
		return fmt.Errorf("%v: %s", err, lastLines(t, 3))
	}
	return err
}

// maxMetricLine is the longest metric line accepted, on stdout or over TCP;
// a longer one fails the trial. Other stdout lines may be of any length.
const maxMetricLine = 64 << 10

// lineCollector parses PERFLAB_METRIC lines from a command's stdout and
// ignores everything else. It keeps at most maxMetricLine bytes of a line:
// enough to tell a metric line from any other, whose rest it skips.
type lineCollector struct {
	mu      sync.Mutex
	buf     []byte // the current line from its first non-blank byte
	skip    bool   // the current line is not a metric line: drop it
	n       int    // complete lines seen
	metrics []lab.Metric
	spans   []lab.Span // the app's phases (PERFLAB_SPAN lines), at flush
	spanLog lab.SpanLog
	err     error
}

func (c *lineCollector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		seg, end := p, false
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			seg, p, end = p[:i], p[i+1:], true
		} else {
			p = nil
		}
		c.feed(seg, end)
	}
	return n, nil
}

// feed takes the next piece of the current line; end says the line ends
// after it.
func (c *lineCollector) feed(seg []byte, end bool) {
	if !c.skip {
		if len(c.buf) == 0 {
			seg = bytes.TrimLeft(seg, " \t\r\v\f")
		}
		if room := maxMetricLine - len(c.buf); len(seg) > room {
			c.buf = append(c.buf, seg[:room]...)
			if metricStart(c.buf) && c.err == nil {
				c.err = fmt.Errorf("stdout line %d: %s line longer than %d bytes", c.n+1, lab.MetricPrefix, maxMetricLine)
			}
			c.skip, c.buf = true, c.buf[:0]
		} else {
			c.buf = append(c.buf, seg...)
			if len(c.buf) > len(lab.MetricPrefix) && !metricStart(c.buf) && !lab.SpanStart(c.buf) {
				c.skip, c.buf = true, c.buf[:0]
			}
		}
	}
	if end {
		c.n++
		if !c.skip && len(c.buf) > 0 {
			c.line(c.buf)
		}
		c.skip, c.buf = false, c.buf[:0]
	}
}

// metricStart reports whether a line (without its leading blanks) that
// holds more than the prefix may be a metric line (lab.IsMetricLine has the
// last word).
func metricStart(b []byte) bool {
	p := lab.MetricPrefix
	return len(b) > len(p) && string(b[:len(p)]) == p && strings.IndexByte(" \t\r\v\f", b[len(p)]) >= 0
}

func (c *lineCollector) line(b []byte) {
	s := string(b)
	if lab.SpanStart(b) {
		c.span(s)
		return
	}
	if !lab.IsMetricLine(s) {
		return
	}
	m, err := lab.ParseMetricLine(s)
	if err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("malformed metric line %d on stdout: %v", c.n, err)
		}
		return
	}
	c.metrics = append(c.metrics, m)
}

// span takes a PERFLAB_SPAN line: a phase's begin or end.
func (c *lineCollector) span(s string) {
	if err := c.spanLog.Add(s); err != nil && c.err == nil {
		c.err = fmt.Errorf("malformed span line %d on stdout: %v", c.n, err)
	}
}

// flush handles a last line without a newline.
func (c *lineCollector) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.skip && len(c.buf) > 0 {
		c.feed(nil, true)
	}
	c.spans = c.spanLog.Spans() // those begun, never ended, last: Label closes them
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func sortStrings(xs []string) { sort.Strings(xs) }

// groupKiller kills the process group of the trial under way when its
// context ends. It watches one context at a time: the run's, with one
// context.AfterFunc for all its trials, or with trial_timeout each trial's
// own (whose end, after the trial, finds no group to kill).
// Its methods are called under the device's trial lock; the function it
// registers runs on its own, hence the atomic group. Each watch has its own
// group variable: stopping a watch does not wait for a call of its function
// already under way, which must not reach a later run's trial.
type groupKiller struct {
	done <-chan struct{} // the watched context's; contexts need not be comparable
	stop func() bool
	cur  *atomic.Int64 // the watch's group under way, 0 when none; nil: no watch
}

// watch makes ctx the context whose cancellation kills the trials' groups.
func (k *groupKiller) watch(ctx context.Context) {
	done := ctx.Done()
	if done == k.done {
		return // the same run, or none to watch (a context never cancelled)
	}
	k.close()
	if done == nil {
		return
	}
	cur := new(atomic.Int64)
	k.done, k.cur = done, cur
	k.stop = context.AfterFunc(ctx, func() {
		if pgid := cur.Load(); pgid != 0 {
			syscall.Kill(-int(pgid), syscall.SIGKILL)
		}
	})
}

// set records the group of the command just started; if ctx was cancelled
// already (the function above may have run before), it kills it now.
func (k *groupKiller) set(ctx context.Context, pgid int) {
	if k.cur != nil {
		k.cur.Store(int64(pgid))
	}
	if ctx.Err() != nil {
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// clear says the command has been waited for.
func (k *groupKiller) clear() {
	if k.cur != nil {
		k.cur.Store(0)
	}
}

// close stops watching.
func (k *groupKiller) close() {
	if k.stop != nil {
		k.stop()
	}
	k.done, k.stop, k.cur = nil, nil, nil
}
