package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
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
	t, err := d.trialSpecFor(req)
	if err != nil {
		return fail(err.Error())
	}
	if t.capt, err = d.takeCapture(t.stdin); err != nil {
		return fail("output capture: " + err.Error())
	}
	defer d.releaseCapture(t)
	if res, ok := d.reset(ctx, t); !ok {
		return res
	}
	res := d.measure(ctx, t)
	d.cleanup(ctx, t, &res)
	return res
}

// trialSpecFor checks the trial's controls and metrics against the
// device set up for the run, and gives the trial its environment: the
// build's, with the trial's arm, index, warmup and metrics token.
func (d *Device) trialSpecFor(req lab.TrialRequest) (trialSpec, error) {
	d.mu.Lock()
	t := trialSpec{req: req, exp: d.exp, metrics: d.metrics, tmp: d.tmp, srv: d.srv, rp: d.reaper, stdin: d.stdin}
	env := d.env[req.BuildKey]
	d.mu.Unlock()
	if t.exp == nil || t.srv == nil || t.rp == nil {
		return t, errors.New("device not set up (Setup was not called or failed)")
	}
	c := req.Controls
	if err := d.checkControls(c); err != nil {
		return t, err
	}
	if len(req.Metrics) > 0 || c.Cachegrind {
		m, err := d.checkMetrics(req.Metrics, c)
		if err != nil {
			return t, err
		}
		t.metrics = m
	}
	if env == nil { // a build Setup did not see
		var err error
		if env, err = spawnEnv(buildEnv(req.Build, t.srv.addr(), t.rp.env())); err != nil {
			return t, fmt.Errorf("exec: %w", err)
		}
	}
	t.token = randomHex(16)
	t.env = append(env[:len(env):len(env)],
		"PERFLAB_ARM="+req.Arm,
		"PERFLAB_TRIAL="+strconv.Itoa(req.Index),
		"PERFLAB_WARMUP="+strconv.FormatBool(req.Warmup),
		lab.MetricsTokenEnv+"="+t.token,
	)
	// The process groups of this trial's commands, whose zombies are
	// reaped with its leftovers.
	t.groups = map[int]bool{}
	t.limit = trialLimit(t.exp.TrialTimeout)
	return t, nil
}

// releaseCapture ends the trial's leftovers and keeps its capture files
// for the next trial only if nothing was written to them and no process
// of this trial is left that could; else it closes them.
func (d *Device) releaseCapture(t trialSpec) {
	if t.rp.endLeftovers(t.groups) && !t.capt.written {
		d.mu.Lock()
		kept := d.spare == nil
		if kept {
			d.spare = t.capt
		}
		d.mu.Unlock()
		if kept {
			return
		}
	}
	t.capt.close()
}

// reset is the reset procedure: state_dir restored from its snapshot,
// then the prepare commands, together within trial_timeout. It returns
// the trial's result and false when the procedure failed.
func (d *Device) reset(ctx context.Context, t trialSpec) (lab.TrialResult, bool) {
	c := t.req.Controls
	if c.StateDir != "" || len(c.Prepare) > 0 {
		t.req.TrialUnderWay() // it may take a while: let the views see the last trial now
	}
	if c.StateDir != "" {
		snap, err := d.snapshot(c.StateDir)
		if err != nil {
			return fail(err.Error()), false
		}
		if err := restoreDir(snap, c.StateDir); err != nil {
			return fail(fmt.Sprintf("restoring state_dir %s: %v", c.StateDir, err)), false
		}
	}
	if len(c.Prepare) == 0 {
		return lab.TrialResult{}, true
	}
	pctx, cancel := withLimit(ctx, t.limit)
	defer cancel()
	for i, p := range c.Prepare {
		if err := d.runHook(pctx, t.rp, p, t.req.Build.Dir, t.env, t.stdin, t.groups); err != nil {
			if pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
				return lab.TrialResult{Status: lab.StatusTimeout, Reason: fmt.Sprintf("prepare[%d] %q: exceeded trial_timeout of %gs", i, p, t.exp.TrialTimeout), Metrics: []lab.Metric{}}, false
			}
			return fail(fmt.Sprintf("prepare[%d] %q: %v", i, p, err)), false
		}
	}
	return lab.TrialResult{}, true
}

// cleanup runs the cleanup commands, even when the run is being
// cancelled: they may have to stop what prepare started. They get their
// own time limit instead: trial_timeout, or cleanupTimeout without one.
// The first one to fail fails a trial that had succeeded.
func (d *Device) cleanup(ctx context.Context, t trialSpec, res *lab.TrialResult) {
	c := t.req.Controls
	if len(c.Cleanup) == 0 {
		return
	}
	climit := t.limit
	if climit == 0 {
		climit = cleanupTimeout
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), climit)
	defer cancel()
	for i, p := range c.Cleanup {
		err := d.runHook(cctx, t.rp, p, t.req.Build.Dir, t.env, t.stdin, t.groups)
		if err == nil || res.Status != lab.StatusOK {
			continue
		}
		res.Status = lab.StatusFailed
		res.Reason = fmt.Sprintf("cleanup[%d] %q: %v", i, p, err)
		if cctx.Err() == context.DeadlineExceeded {
			res.Reason = fmt.Sprintf("cleanup[%d] %q: exceeded its limit of %v", i, p, climit)
			if t.limit > 0 {
				res.Status = lab.StatusTimeout
				res.Reason = fmt.Sprintf("cleanup[%d] %q: exceeded trial_timeout of %gs", i, p, t.exp.TrialTimeout)
			}
		}
	}
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
