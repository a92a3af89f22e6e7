package adb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
	"github.com/perflab/perflab/lab/proxy"
	"github.com/perflab/perflab/lab/shquote"
)

// An adb trial: the controls it needs root for, the reset procedure, the
// launch and its metrics.

// rootControls are the controls that need root.
func rootControls(c lab.Controls) []string {
	var need []string
	raw := strings.TrimSpace(string(c.Governor))
	if raw != "" && raw != `""` && raw != `"stock"` && raw != `"off"` && raw != "null" {
		need = append(need, "governor")
	}
	for _, x := range []struct {
		on   bool
		name string
	}{{c.RestoreSnapshot, "restore_snapshot"}, {c.ClockReset, "clock_reset"}, {c.Tmpfs, "tmpfs"}, {c.DropCaches, "drop_caches"}} {
		if x.on {
			need = append(need, x.name)
		}
	}
	return need
}

// CheckControls says, without touching the phone, whether it can apply
// the controls of exp (lab.ControlsChecker): checkControls, which every
// trial makes again for the controls it is given, then controls.governor
// names a profile this phone knows. Setup makes this check first; whether
// the phone takes the profile is only learnt there.
func (d *Device) CheckControls(exp *lab.Experiment) error {
	if err := d.checkControls(exp.Controls); err != nil {
		return err
	}
	_, err := governor.Resolve(exp.Controls.Governor, d.Info().Model, d.builtinProfiles())
	return err
}

var _ lab.ControlsChecker = (*Device)(nil)

// checkControls says whether the phone can apply c, from what Open learnt:
// root for the controls that need it (rootControls), and adb reverse to
// this host for the proxy (a remote adb server needs --ssh).
func (d *Device) checkControls(c lab.Controls) error {
	if need := rootControls(c); len(need) > 0 && d.rootVia == "" {
		verb := "needs"
		if len(need) > 1 {
			verb = "need"
		}
		return fmt.Errorf("controls.%s: %s root, and adbd is not root and su is missing: %w", strings.Join(need, ", controls."), verb, lab.ErrUnsupported)
	}
	if mode := proxy.Mode(c); mode != proxy.ModeOff && !d.appMetricsReach() {
		return fmt.Errorf("controls.proxy %q: %w (%w)", mode, lab.ErrUnsupported, d.c.remoteErr("the record/replay proxy"))
	}
	return nil
}

// RunTrial runs the reset procedure the controls ask for, launches the
// build's activity with am start -W and gathers TotalTime, WaitTime and
// the metrics the app reports over adb reverse. With controls.proxy on,
// the phone's HTTP traffic goes through the record/replay proxy and a
// request the recording cannot answer fails the trial (proxy.Controller);
// turned off between rounds, the phone gets its own proxy setting back.
func (d *Device) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	cmd := d.cmdMode
	d.mu.Unlock()
	if cmd {
		return d.cmdTrial(ctx, req)
	}
	if err := d.checkControls(req.Controls); err != nil {
		return d.fail(err, "reset")
	}
	c, err := d.syncProxy(ctx, proxy.Mode(req.Controls))
	if err != nil {
		return d.fail(err, "proxy")
	}
	if c == nil {
		return d.runTimed(ctx, req)
	}
	return c.Trial(req, func() lab.TrialResult { return d.runTimed(ctx, req) })
}

// runTimed runs one trial within the experiment's trial_timeout.
func (d *Device) runTimed(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	timeout := 0.0
	if d.exp != nil {
		timeout = d.exp.TrialTimeout
	}
	d.mu.Unlock()
	tctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, time.Duration(timeout*float64(time.Second)))
		defer cancel()
	}
	res := d.runTrial(tctx, req)
	if ctx.Err() == nil && (tctx.Err() != nil || timeout > 0 && pastDeadline(tctx)) {
		return lab.TrialResult{Status: lab.StatusTimeout, Reason: fmt.Sprintf("exceeded trial_timeout of %gs", timeout), Metrics: []lab.Metric{}}
	}
	if res.Status != lab.StatusOK && res.Lost {
		d.mu.Lock()
		d.lost = true
		d.mu.Unlock()
	}
	return res
}

// pastDeadline reports whether ctx's deadline has passed. A trial that
// ends past trial_timeout is a timeout even when it got through before the
// context's timer fired: on a loaded host the timer can fire late, and
// ctx.Err() stays nil until it does.
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// Fail is the result of a trial that failed at step what with err: Lost
// when the device or its adb server went away.
func (d *Device) Fail(err error, what string) lab.TrialResult { return d.fail(err, what) }

func (d *Device) fail(err error, what string) lab.TrialResult {
	r := lab.TrialResult{Status: lab.StatusFailed, Reason: what + ": " + err.Error()}
	if errors.Is(err, ErrDeviceLost) || errors.Is(err, ErrNoServer) {
		r.Lost = true
		r.Reason = "device lost during " + what + ": " + err.Error()
	}
	return r
}

func (d *Device) runTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	ab, ok := d.builds[req.BuildKey]
	m := d.metrics
	d.mu.Unlock()
	if !ok {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: "build " + req.BuildKey + " was not set up"}
	}
	if err := d.reset(ctx, req.Controls, ab); err != nil {
		return d.fail(err, "reset")
	}
	cmd := fmt.Sprintf("am start -W -n %s", shquote.Quote(ab.Package+"/"+ab.Activity))
	if m != nil {
		m.reset()
		cmd += fmt.Sprintf(" --ei %s %d", MetricsPortExtra, m.port)
	}
	var rec *record
	var prof *lab.Profile
	var profNote string
	if req.Profile {
		// simpleperf samples the app from before it starts.
		rec, profNote = d.startRecord(ctx, ab.Package, req.Index)
	}
	out, err := d.c.Run(ctx, d.serial, cmd)
	if rec != nil {
		prof, profNote = rec.stop(ctx, err == nil)
	}
	if err != nil {
		return d.fail(err, "am start")
	}
	total, wait, err := ParseAmStart(out)
	if err != nil {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: err.Error()}
	}
	metrics := []lab.Metric{{Name: MetricTotalTime, Value: total, Unit: "ms", Better: "lower"}}
	if wait >= 0 {
		metrics = append(metrics, lab.Metric{Name: MetricWaitTime, Value: wait, Unit: "ms", Better: "lower"})
	}
	if m != nil && (wantsAppMetrics(req.Metrics) || prof != nil) {
		app := m.collect(ctx, d.MetricsWait)
		if len(app.bad) > 0 {
			return lab.TrialResult{Status: lab.StatusFailed, Reason: "malformed metric line from the app: " + app.bad[0], Metrics: metrics}
		}
		metrics = append(metrics, app.metrics...)
		if prof != nil {
			prof.Spans = app.spans
			if len(app.badSpan) > 0 {
				// The phases are lost, not the trial.
				prof.Spans = nil
				profNote = joinNotes(profNote, fmt.Sprintf("phases lost: malformed span line from the app: %s", app.badSpan[0]))
			}
		}
	}
	res := filterMetrics(metrics, req.Metrics)
	if req.Profile {
		res.Profile, res.ProfileNote = prof, profNote
	}
	return res
}

// reset runs the reset procedure before a trial, in MobileLab's order:
// governor, kill, dismiss dialogs, restore the data snapshot (onto tmpfs
// when asked), reset the clock, proxy, drop caches.
func (d *Device) reset(ctx context.Context, c lab.Controls, ab appBuild) error {
	// RunTrial checked c (checkControls).
	if _, err := d.applyGovernor(ctx, c.Governor); err != nil {
		return err
	}
	pkg := shquote.Quote(ab.Package)
	if c.KillApp {
		if _, err := d.c.Run(ctx, d.serial, "am force-stop "+pkg); err != nil {
			return err
		}
	}
	if c.DismissDialogs {
		if err := d.dismissDialogs(ctx); err != nil {
			return err
		}
	}
	var root []string
	d.mu.Lock()
	mounted := d.mounted[ab.Package]
	clock0 := d.clock0
	d.mu.Unlock()
	data := "/data/data/" + pkg
	switch {
	case c.Tmpfs && !mounted:
		// The mount point must keep the app's owner and SELinux label,
		// or the app cannot write its own data.
		owner, err := d.runRoot(ctx, "stat -c %u:%g "+data)
		if err != nil {
			return err
		}
		// The mount's source names this perflab process, so a later one can
		// unmount it if this one dies (see unmountLeftovers).
		root = append(root, "mount -t tmpfs -o mode=0700 "+shquote.Quote(governor.OwnerTag())+" "+data+" && chown "+shquote.Quote(strings.TrimSpace(owner))+" "+data+
			" && restorecon -R "+data)
	case !c.Tmpfs && mounted:
		root = append(root, "umount "+data)
	}
	if c.RestoreSnapshot {
		// rm -rf cannot remove a tmpfs mount point (it empties it), so
		// its status is ignored; cp -a's is not.
		root = append(root, "rm -rf "+data+"; cp -a "+SnapshotDir+"/"+pkg+" /data/data/ && restorecon -R "+data)
	}
	if c.ClockReset && !clock0.IsZero() {
		root = append(root, "date -u "+clock0.Format("010215042006.05"))
	}
	if c.DropCaches {
		root = append(root, "sync; echo 3 > /proc/sys/vm/drop_caches")
	}
	// One command line per step: its exit status is its last command's.
	for _, r := range root {
		if _, err := d.runRoot(ctx, r); err != nil {
			return err
		}
	}
	if len(root) > 0 {
		d.mu.Lock()
		if c.Tmpfs != mounted {
			d.mounted[ab.Package] = c.Tmpfs
		}
		d.mu.Unlock()
	}
	return nil
}

// dismissDialogs presses BACK while a crash or ANR dialog has focus.
func (d *Device) dismissDialogs(ctx context.Context) error {
	for i := 0; i < 5; i++ {
		out, err := d.c.Run(ctx, d.serial, "dumpsys window windows | grep mCurrentFocus")
		var ee *ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		if !strings.Contains(out, "Application Error") && !strings.Contains(out, "Application Not Responding") &&
			!strings.Contains(out, "isn't responding") {
			return nil
		}
		if _, err := d.c.Run(ctx, d.serial, "input keyevent KEYCODE_BACK"); err != nil {
			return err
		}
	}
	return errors.New("a system dialog stays on screen after 5 BACK presses")
}
