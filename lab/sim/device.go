package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
)

// Options configure a simulated device.
type Options struct {
	// Seed seeds the noise; 0 uses the experiment's seed in Setup.
	Seed int64
	// Realtime paces trials and probes at wall-clock speed.
	Realtime bool
	// Slowdown makes this unit slower (>1) or faster (<1) than its model
	// (Phone.SetSlowdown); 0 means 1.
	Slowdown float64
}

// SnapshotDir holds the app-state snapshots the reset procedure restores.
const SnapshotDir = "/data/local/tmp/perflab-snapshot"

// Device is a simulated phone as a lab.Device, lab.Prober and lab.Governor.
type Device struct {
	mu     sync.Mutex
	ph     *Phone
	opt    Options
	preset Preset

	saved      *lab.GovernorProfile // settings before our first change
	keep       bool
	govRaw     string // controls.governor in force
	pkgs       []string
	snapshots  map[string]bool
	tmpfs      map[string]bool
	startClock time.Time
}

var (
	_ lab.Device   = (*Device)(nil)
	_ lab.Prober   = (*Device)(nil)
	_ lab.Governor = (*Device)(nil)
)

// Open boots a simulated phone of the named preset ("pixel", "nexus5").
func Open(preset string, opt Options) (*Device, error) {
	p, err := Lookup(preset)
	if err != nil {
		return nil, err
	}
	ph := NewPhone(p, opt.Seed)
	if opt.Slowdown != 0 {
		if err := ph.SetSlowdown(opt.Slowdown); err != nil {
			return nil, err
		}
	}
	return &Device{ph: ph, opt: opt, preset: p,
		snapshots: map[string]bool{}, tmpfs: map[string]bool{}}, nil
}

// VirtualTime is the phone's own clock (its uptime); it runs free of the
// wall clock unless the device is paced (Options.Realtime).
func (d *Device) VirtualTime() (time.Duration, bool) {
	return d.ph.Uptime(), !d.opt.Realtime
}

var _ lab.VirtualClock = (*Device)(nil)

// Phone exposes the model, e.g. to serve it over adb or to inspect it in tests.
func (d *Device) Phone() *Phone { return d.ph }

// Caps returns the capabilities of every simulated phone: the controls it
// models, plus the probe and the governor it implements.
func Caps() []string {
	return lab.DeriveCaps((*Device)(nil), lab.CapSimTime, lab.CapRestoreSnapshot, lab.CapKillApp, lab.CapDismissDialogs,
		lab.CapClockReset, lab.CapProxy, lab.CapTmpfs, lab.CapDropCaches)
}

// InfoFor describes a preset as a device.
func InfoFor(p Preset) lab.DeviceInfo {
	var apps []string
	for _, a := range Apps() {
		apps = append(apps, a.Name)
	}
	return lab.DeviceInfo{
		ID: "sim:" + p.Name, Backend: "sim", Model: p.Model, State: "device",
		Caps: Caps(),
		Props: map[string]string{
			"preset": p.Name, "description": p.Description, "abi": p.ABI,
			"apps": strings.Join(apps, ","), "product": p.Product,
		},
	}
}

// Info describes the device.
func (d *Device) Info() lab.DeviceInfo { return InfoFor(d.preset) }

// Setup readies the phone for exp: reseeds the noise, applies the
// controls, installs the builds, records the proxy traffic when asked,
// runs each build once to create its state, and snapshots that state.
func (d *Device) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if exp == nil {
		return nil, errors.New("sim: no experiment")
	}
	if err := checkMetrics(exp.Metrics); err != nil {
		return nil, err
	}
	if err := d.CheckControls(exp); err != nil {
		return nil, err
	}
	d.ph.Reseed(NoiseSeed(d.opt.Seed, exp.Seed))
	keys := make([]string, 0, len(exp.Builds))
	for k := range exp.Builds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d.pkgs = nil
	seen := map[string]bool{}
	if err := checkBuilds(exp, keys); err != nil {
		return nil, err
	}
	for _, k := range keys {
		b := exp.Builds[k]
		pkg := BuildPackage(b)
		if err := d.ph.Install(pkg); err != nil {
			return nil, fmt.Errorf("builds.%s: %w", k, err)
		}
		if !seen[pkg] {
			seen[pkg] = true
			d.pkgs = append(d.pkgs, pkg)
		}
	}
	var events []lab.Event
	ev, err := d.syncControls(ctx, exp.Controls, true)
	events = append(events, ev...)
	if err != nil {
		return events, err
	}
	for _, pkg := range d.pkgs {
		if err := ctx.Err(); err != nil {
			return events, err
		}
		d.ph.ForceStop(pkg)
		// Start each run from a clean install, so a reused device's snapshot
		// does not carry the state earlier runs left behind.
		if err := d.ph.ClearData(pkg); err != nil {
			return events, fmt.Errorf("clearing %s before its snapshot: %w", pkg, err)
		}
		if _, err := d.ph.Launch(pkg); err != nil { // performance_test.setup()
			return events, err
		}
		d.ph.ForceStop(pkg)
		d.ph.DismissDialogs()
		snap := SnapshotDir + "/" + pkg
		_ = d.ph.MkdirAll(SnapshotDir)
		_ = d.ph.RemoveAll(snap)
		if err := d.ph.Copy(DataDir(pkg), snap); err != nil {
			return events, fmt.Errorf("snapshot of %s: %w", pkg, err)
		}
		d.snapshots[pkg] = true
	}
	d.startClock = d.ph.Now()
	d.ph.Advance(2 * time.Second)
	return events, nil
}

// CheckBuilds says, without touching the phone, whether every build of exp
// names a simulated app this phone has (lab.BuildChecker); Setup makes the
// same check.
func (d *Device) CheckBuilds(exp *lab.Experiment) error {
	if exp == nil {
		return errors.New("sim: no experiment")
	}
	return checkBuilds(exp, slices.Sorted(maps.Keys(exp.Builds)))
}

var _ lab.BuildChecker = (*Device)(nil)

// CheckMetrics says, without touching the phone, whether every metric exp
// asks for is one a simulated app reports (lab.MetricChecker); Setup makes
// the same check.
func (d *Device) CheckMetrics(exp *lab.Experiment) error {
	if exp == nil {
		return errors.New("sim: no experiment")
	}
	return checkMetrics(exp.Metrics)
}

var _ lab.MetricChecker = (*Device)(nil)

// checkMetrics refuses a requested metric the simulated apps do not report.
func checkMetrics(req []string) error {
	for i, m := range req {
		if err := lab.CheckMetricName(i, m, Metrics, false); err != nil {
			return err
		}
	}
	return nil
}

// checkBuilds checks the builds of exp named by keys, in that order.
func checkBuilds(exp *lab.Experiment, keys []string) error {
	for _, k := range keys {
		b := exp.Builds[k]
		if b.App == "" {
			return fmt.Errorf("builds.%s.app: a sim build names a simulated app (%s)", k, appNames())
		}
		if _, err := LookupApp(b.App); err != nil {
			return fmt.Errorf("builds.%s.app: %w", k, err)
		}
		if b.EffectPct <= -100 {
			return fmt.Errorf("builds.%s.effect_pct: %v would make startup free; want > -100", k, b.EffectPct)
		}
		if b.Effect != nil {
			if err := NewCallTree(b.App).CheckFunction(b.Effect.Function); err != nil {
				return fmt.Errorf("builds.%s.effect.function: %w", k, err)
			}
		}
	}
	return nil
}

func appNames() string {
	var n []string
	for _, a := range Apps() {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

// CheckControls says, without touching the phone, whether it can apply the
// controls of exp (lab.ControlsChecker): controls.governor names a profile
// this phone knows (its preset's, or one tuned for its model). Setup makes
// this check first, and each trial resolves a changed profile the same
// way; the phone ignores the local host's controls.
func (d *Device) CheckControls(exp *lab.Experiment) error {
	if exp == nil {
		return errors.New("sim: no experiment")
	}
	_, err := d.governorProfile(exp.Controls.Governor)
	return err
}

var _ lab.ControlsChecker = (*Device)(nil)

// governorProfile is the profile controls.governor (raw) names, nil for
// none.
func (d *Device) governorProfile(raw json.RawMessage) (*lab.GovernorProfile, error) {
	return governor.Resolve(raw, d.preset.Model, d.preset.Builtin)
}

// syncControls brings the device-wide controls (governor, tmpfs, proxy) in
// line with c, returning a settings event for each change.
func (d *Device) syncControls(ctx context.Context, c lab.Controls, first bool) ([]lab.Event, error) {
	var events []lab.Event
	raw := strings.TrimSpace(string(c.Governor))
	if raw != d.govRaw || first {
		p, err := d.governorProfile(c.Governor)
		if err != nil {
			return nil, err
		}
		if p == nil {
			if d.saved != nil {
				stock := *d.saved
				m, err := d.restore(ctx)
				if err != nil {
					return nil, err
				}
				events = append(events, lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{
					Profile: &stock, Mismatches: m, Detail: map[string]string{"governor": "restored stock settings"}}})
			}
		} else {
			m, err := d.applyProfile(ctx, *p)
			if err != nil {
				return nil, fmt.Errorf("controls.governor: %w", err)
			}
			back, _ := d.readProfile(ctx)
			back.Name = p.Name
			events = append(events, lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{
				Profile: &back, Mismatches: m,
				Detail: map[string]string{"governor": governor.Describe(*p)}}})
		}
		d.govRaw = raw
	}
	for _, pkg := range d.pkgs {
		dir := DataDir(pkg)
		switch {
		case c.Tmpfs && !d.tmpfs[pkg]:
			if err := d.ph.MountTmpfs(dir); err != nil {
				return events, err
			}
			d.tmpfs[pkg] = true
			if d.snapshots[pkg] {
				_ = d.ph.Copy(SnapshotDir+"/"+pkg, dir)
			}
			events = append(events, settingsNote("tmpfs", "mounted tmpfs on "+dir))
		case !c.Tmpfs && d.tmpfs[pkg]:
			if err := d.ph.Unmount(dir); err != nil {
				return events, err
			}
			delete(d.tmpfs, pkg)
			events = append(events, settingsNote("tmpfs", "unmounted tmpfs from "+dir))
		}
	}
	mode := c.Proxy
	if mode == "" {
		mode = "off"
	}
	if mode != d.ph.Proxy() {
		if err := d.ph.SetProxy(mode); err != nil {
			return events, fmt.Errorf("controls.proxy: %w", err)
		}
		events = append(events, settingsNote("proxy", "proxy "+mode))
	}
	return events, nil
}

func settingsNote(k, v string) lab.Event {
	return lab.Event{Type: lab.EventSettings, Settings: &lab.Settings{Detail: map[string]string{k: v}}}
}

// RunTrial runs the reset procedure req.Controls asks for, then launches
// the build's app once and reports its startup time.
func (d *Device) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	fail := func(format string, a ...any) lab.TrialResult {
		return lab.TrialResult{Status: lab.StatusFailed, Reason: fmt.Sprintf(format, a...)}
	}
	if err := ctx.Err(); err != nil {
		return fail("cancelled: %v", err)
	}
	if req.Build.App == "" {
		return fail("build %q has no sim app", req.BuildKey)
	}
	pkg := BuildPackage(req.Build)
	if _, err := d.syncControls(ctx, req.Controls, false); err != nil {
		return fail("%v", err)
	}
	t0 := d.ph.Uptime()
	c := req.Controls
	if c.RestoreSnapshot && d.snapshots[pkg] {
		dir := DataDir(pkg)
		_ = d.ph.RemoveAll(dir)
		if err := d.ph.Copy(SnapshotDir+"/"+pkg, dir); err != nil {
			return fail("restore snapshot: %v", err)
		}
		d.ph.Advance(800 * time.Millisecond)
	}
	if c.KillApp {
		d.ph.ForceStop(pkg)
	}
	if c.DismissDialogs {
		d.ph.DismissDialogs()
	}
	if c.ClockReset && !d.startClock.IsZero() {
		d.ph.SetClock(d.startClock)
	}
	if c.DropCaches {
		if err := d.ph.WriteFile(DropCachesPath, []byte("3")); err != nil {
			return fail("drop caches: %v", err)
		}
	}
	l, err := d.ph.Launch(pkg)
	if err != nil {
		return fail("%v", err)
	}
	d.ph.Advance(1500 * time.Millisecond)
	if d.opt.Realtime {
		el := d.ph.Uptime() - t0
		t := time.NewTimer(el)
		select {
		case <-ctx.Done():
			t.Stop()
			return fail("cancelled: %v", ctx.Err())
		case <-t.C:
		}
	}
	res := lab.TrialResult{Status: lab.StatusOK, Metrics: pickMetrics(l.Metrics, req.Metrics)}
	if req.Profile {
		res.Profile = d.profile(pkg, l, req.Index)
	}
	return res
}

// Metrics are the metrics a simulated app reports (Launch.Metrics).
var Metrics = []string{"startup_ms", "bytes_written"}

func pickMetrics(all []lab.Metric, want []string) []lab.Metric {
	if len(want) == 0 {
		return all
	}
	var out []lab.Metric
	for _, w := range want {
		for _, m := range all {
			if m.Name == w {
				out = append(out, m)
			}
		}
	}
	return out
}

// Close restores the governor settings (unless the profile asked to keep
// them), unmounts tmpfs and turns the proxy off.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	if d.saved != nil && !d.keep {
		if _, err := d.restore(context.Background()); err != nil {
			errs = append(errs, err)
		}
	}
	for pkg := range d.tmpfs {
		if err := d.ph.Unmount(DataDir(pkg)); err != nil {
			errs = append(errs, err)
		}
		delete(d.tmpfs, pkg)
	}
	_ = d.ph.SetProxy("off")
	d.govRaw = ""
	return errors.Join(errs...)
}

// Probe streams the modelled MFLOPS probe.
func (d *Device) Probe(ctx context.Context, opts lab.ProbeOptions, out chan<- lab.ProbeSample) error {
	dur := time.Duration(opts.DurationS * float64(time.Second))
	iv := time.Duration(opts.IntervalS * float64(time.Second))
	return d.ph.RunProbe(ctx, dur, iv, opts.Realtime || d.opt.Realtime, out)
}

// ReadProfile reads the governor settings back from the phone's sysfs.
func (d *Device) ReadProfile(ctx context.Context) (lab.GovernorProfile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.readProfile(ctx)
}

func (d *Device) readProfile(ctx context.Context) (lab.GovernorProfile, error) {
	f := Files{d.ph}
	l, err := governor.Discover(ctx, f, f)
	if err != nil {
		return lab.GovernorProfile{}, err
	}
	return governor.Read(ctx, f, f, l)
}

// ApplyProfile applies p through sysfs and verifies it by read-back. The
// settings found before the first change are restored by Close unless
// p.Keep.
func (d *Device) ApplyProfile(ctx context.Context, p lab.GovernorProfile) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.applyProfile(ctx, p)
}

func (d *Device) applyProfile(ctx context.Context, p lab.GovernorProfile) ([]string, error) {
	f := Files{d.ph}
	l, err := governor.Discover(ctx, f, f)
	if err != nil {
		return nil, err
	}
	if d.saved == nil {
		cur, err := governor.Read(ctx, f, f, l)
		if err != nil {
			return nil, err
		}
		cur.Name = "stock"
		d.saved = &cur
	}
	d.keep = p.Keep
	return governor.Apply(ctx, f, f, l, p)
}

func (d *Device) restore(ctx context.Context) ([]string, error) {
	f := Files{d.ph}
	l, err := governor.Discover(ctx, f, f)
	if err != nil {
		return nil, err
	}
	m, err := governor.Apply(ctx, f, f, l, *d.saved)
	if err == nil {
		d.saved = nil
	}
	return m, err
}

// GovernorLayout discovers the phone's clusters, frequency tables and
// controls, for `perflab tune`.
func (d *Device) GovernorLayout(ctx context.Context) (governor.Layout, error) {
	f := Files{d.ph}
	return governor.Discover(ctx, f, f)
}

// BuiltinProfile resolves the preset's named profiles ("recommended",
// "stock", "max").
func (d *Device) BuiltinProfile(name string) (lab.GovernorProfile, bool) {
	return d.preset.Builtin(name)
}

// Idle lets the phone sit idle for d of device time (cooling down between
// checks), pacing at wall-clock speed when the device is realtime.
func (d *Device) Idle(ctx context.Context, dur time.Duration) error {
	d.ph.Advance(dur)
	if d.opt.Realtime {
		t := time.NewTimer(dur)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return ctx.Err()
}

// Files adapts a Phone to governor.Files and governor.Services.
type Files struct{ Phone *Phone }

// ReadFile reads a file of the phone.
func (f Files) ReadFile(ctx context.Context, p string) (string, error) {
	b, err := f.Phone.ReadFile(p)
	return string(b), err
}

// WriteFile writes a file of the phone.
func (f Files) WriteFile(ctx context.Context, p, v string) error {
	return f.Phone.WriteFile(p, []byte(v))
}

// ServiceRunning reports an init service's state.
func (f Files) ServiceRunning(ctx context.Context, name string) (bool, error) {
	run, ok := f.Phone.ServiceRunning(name)
	if !ok {
		return false, fmt.Errorf("service %s: %w", name, fs.ErrNotExist)
	}
	return run, nil
}

// SetService starts or stops an init service.
func (f Files) SetService(ctx context.Context, name string, run bool) error {
	return f.Phone.SetService(name, run)
}
