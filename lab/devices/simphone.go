package devices

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/adb"
	"github.com/perflab/perflab/lab/shquote"
	"github.com/perflab/perflab/lab/sim"
)

// simPhone is a simulated phone served over adb (perflab simdevice): an
// ordinary adb device plus the extras the phone advertises itself in the
// sim.PropExtras property. The adb backend knows nothing of them.
type simPhone struct {
	*adb.Device
	extras   map[string]bool
	preset   string // sim.PropPreset
	slowdown string // sim.PropSlowdown ("" from a phone that does not say)

	mu    sync.Mutex
	proxy string // the perflab.proxy switch as last set; "" after setup
}

// WithSimExtras wraps d when it advertises simulator extras (a perflab
// simdevice), and returns it unchanged otherwise (every real phone).
func WithSimExtras(ctx context.Context, d *adb.Device) (lab.Device, error) {
	v, err := d.Prop(ctx, sim.PropExtras)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", d.Serial(), err)
	}
	if v == "" {
		return d, nil
	}
	p := &simPhone{Device: d, extras: map[string]bool{}}
	for _, e := range strings.Split(v, ",") {
		p.extras[strings.TrimSpace(e)] = true
	}
	if p.slowdown, err = d.Prop(ctx, sim.PropSlowdown); err != nil {
		return nil, fmt.Errorf("device %s: %w", d.Serial(), err)
	}
	if p.extras[sim.ExtraHostBinaries] {
		plat, err := d.Prop(ctx, sim.PropHostPlatform)
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Serial(), err)
		}
		if plat != "" {
			d.SetPlatform(plat) // its shell runs the serving host's programs
		}
	}
	if p.extras[sim.ExtraProfiles] {
		if p.preset, err = d.Prop(ctx, sim.PropPreset); err != nil {
			return nil, fmt.Errorf("device %s: %w", d.Serial(), err)
		}
		if pr, err := sim.Lookup(p.preset); err == nil {
			d.SetBuiltins(pr.Builtin)
		}
	}
	return p, nil
}

// Info adds the advertised extras to the adb device's description.
func (p *simPhone) Info() lab.DeviceInfo {
	info := p.Device.Info()
	info.Props = maps.Clone(info.Props)
	if info.Props == nil {
		info.Props = map[string]string{}
	}
	info.Props[sim.PropExtras] = strings.Join(slices.Sorted(maps.Keys(p.extras)), ",")
	if p.preset != "" {
		info.Props[sim.PropPreset] = p.preset
	}
	if p.slowdown != "" {
		info.Props[sim.PropSlowdown] = p.slowdown
	}
	return info
}

// Setup checks the metrics (CheckMetrics), names each build of a sim app
// by the package the phone has it installed under, then sets the adb
// device up.
func (p *simPhone) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	if err := p.CheckMetrics(exp); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.proxy = ""
	p.mu.Unlock()
	return p.Device.Setup(ctx, p.appBuilds(exp))
}

// CheckMetrics is the adb device's check (app metrics need adb reverse to
// reach this host), then, on a phone with the simulated apps, a closed
// set: am start -W's metrics and those every simulated app reports
// (sim.Metrics), where a real phone's app may report any.
func (p *simPhone) CheckMetrics(exp *lab.Experiment) error {
	if err := p.Device.CheckMetrics(exp); err != nil || !p.extras[sim.ExtraApps] {
		return err
	}
	known := append([]string{adb.MetricTotalTime, adb.MetricWaitTime}, sim.Metrics...)
	for i, m := range exp.Metrics {
		if err := lab.CheckMetricName(i, m, known, false); err != nil {
			return err
		}
	}
	return nil
}

// CheckBuilds is the adb device's check of the builds as Setup passes them
// on (a sim app named by its package).
func (p *simPhone) CheckBuilds(exp *lab.Experiment) error {
	return p.Device.CheckBuilds(p.appBuilds(exp))
}

// appBuilds names each build of a sim app by the package the phone has it
// installed under, when the phone has the simulated apps.
func (p *simPhone) appBuilds(exp *lab.Experiment) *lab.Experiment {
	if !p.extras[sim.ExtraApps] {
		return exp
	}
	e := *exp
	e.Builds = maps.Clone(exp.Builds)
	for k, b := range e.Builds {
		if b.Package == "" && b.App != "" {
			b.Package = sim.BuildPackage(b)
			if b.Activity == "" {
				b.Activity = sim.MainActivity
			}
			e.Builds[k] = b
		}
	}
	return &e
}

// RunTrial flips the phone's proxy model to the trial's proxy mode (the
// real wiring, http_proxy over adb reverse, is the adb device's), then runs
// the trial.
func (p *simPhone) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	if p.extras[sim.ExtraProxy] && p.HasRoot() {
		want := req.Controls.Proxy
		if want == "" {
			want = "off"
		}
		p.mu.Lock()
		have := p.proxy
		p.mu.Unlock()
		if want != have && (want != "off" || have != "") {
			if _, err := p.RunRoot(ctx, "setprop "+sim.PropProxy+" "+shquote.Quote(want)); err != nil {
				return p.Fail(err, "reset")
			}
			p.mu.Lock()
			p.proxy = want
			p.mu.Unlock()
		}
	}
	return p.Device.RunTrial(ctx, req)
}

// Reconnect waits for the phone and forgets the proxy switch, which a
// restart resets.
func (p *simPhone) Reconnect(ctx context.Context) error {
	err := p.Device.Reconnect(ctx)
	p.mu.Lock()
	p.proxy = ""
	p.mu.Unlock()
	return err
}

// Idle lets the phone cool down for d: as simulated time when it can
// advance its clock, else in real time.
func (p *simPhone) Idle(ctx context.Context, d time.Duration) error {
	if !p.extras[sim.ExtraAdvance] {
		return lab.Sleep(ctx, d)
	}
	_, err := p.Client().Run(ctx, p.Serial(), fmt.Sprintf("perflab-advance %.3f", d.Seconds()))
	return err
}

// BuiltinProfile resolves the preset's named profiles ("recommended",
// "stock", ...).
func (p *simPhone) BuiltinProfile(name string) (lab.GovernorProfile, bool) {
	pr, err := sim.Lookup(p.preset)
	if !p.extras[sim.ExtraProfiles] || err != nil {
		return lab.GovernorProfile{}, false
	}
	return pr.Builtin(name)
}
