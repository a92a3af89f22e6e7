// Package check runs MFLOPS stability checks and governor tuning on any
// device: apply a governor profile, stream the probe, judge the window with
// analysis.StabilityOf, and put the original settings back. `perflab check`,
// `perflab tune` and the TUI all use it.
package check

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/governor"
)

// Optional device capabilities the check uses when present.
type (
	// Layouter reports a device's clusters and frequency tables.
	Layouter interface {
		GovernorLayout(ctx context.Context) (governor.Layout, error)
	}
	// Builtins resolves a device's own named profiles.
	Builtins interface {
		BuiltinProfile(name string) (lab.GovernorProfile, bool)
	}
	// Idler lets a device cool down; devices without it are waited for in real time.
	Idler interface {
		Idle(ctx context.Context, d time.Duration) error
	}
)

// Options configure one check.
type Options struct {
	// Profile is applied before the probe: a name ("recommended", "stock",
	// a built-in of the device), a .json file, or an inline JSON profile.
	// Empty runs with the device's current settings.
	Profile string
	// Resolved, when set, is applied instead of Profile.
	Resolved  *lab.GovernorProfile
	Duration  time.Duration
	Interval  time.Duration
	Size      int
	Realtime  bool
	Keep      bool // leave the profile applied afterwards
	Stability analysis.StabilityOptions

	// sweeping is set by Tune: Keep then only means "until the next
	// candidate", and the crash record stays.
	sweeping bool
}

// Paced is a device that says how long it takes to settle: the check
// window that reaches its thermal steady state, and the cool-down between
// tuning candidates. A device without it is a phone (ten and three
// minutes; cheap on sim, which runs on simulated time).
type Paced interface {
	CheckWindow() time.Duration
	Cooldown() time.Duration
}

// DefaultDuration is the check window for dev (see Paced).
func DefaultDuration(dev lab.Device) time.Duration {
	if p, ok := dev.(Paced); ok {
		return p.CheckWindow()
	}
	return 10 * time.Minute
}

// DefaultCooldown is the cool-down between tuning candidates on dev (see
// Paced).
func DefaultCooldown(dev lab.Device) time.Duration {
	if p, ok := dev.(Paced); ok {
		return p.Cooldown()
	}
	return 3 * time.Minute
}

// Result is a finished check.
type Result struct {
	Profile    *lab.GovernorProfile // applied, as read back; nil when none
	Mismatches []string             // files whose read-back differed
	Samples    []lab.ProbeSample
	Stability  analysis.Stability
	Restored   bool // original settings were put back
	// Notes say what was repaired first: settings an earlier perflab run
	// had left on the device (see governor.Guard).
	Notes []string
}

// ProberFor returns the device's probe.
func ProberFor(dev lab.Device) (lab.Prober, error) {
	if p, ok := dev.(lab.Prober); ok {
		return p, nil
	}
	return nil, fmt.Errorf("device %s cannot run the MFLOPS probe: %w", dev.Info().ID, lab.ErrUnsupported)
}

// GovernorFor returns the device's governor.
func GovernorFor(dev lab.Device) (lab.Governor, error) {
	if g, ok := dev.(lab.Governor); ok {
		return g, nil
	}
	return nil, fmt.Errorf("device %s cannot set governors: %w", dev.Info().ID, lab.ErrUnsupported)
}

// RepairLeftover restores the settings an earlier perflab run left on the
// device, when the governor knows how (see governor.Guard), and returns
// notes saying so.
func RepairLeftover(ctx context.Context, g lab.Governor) []string {
	if r, ok := g.(governor.LeftoverRepairer); ok {
		return r.RepairLeftover(ctx)
	}
	return nil
}

// Restore puts the original settings back: through the governor's own
// record when it keeps one (governor.Restorer, which also ends the crash
// record), else by applying orig.
func Restore(ctx context.Context, g lab.Governor, orig lab.GovernorProfile) ([]string, error) {
	if r, ok := g.(governor.Restorer); ok {
		return r.Restore(ctx)
	}
	return g.ApplyProfile(ctx, orig)
}

// LayoutFor returns the device's cluster layout.
func LayoutFor(ctx context.Context, dev lab.Device) (governor.Layout, error) {
	if l, ok := dev.(Layouter); ok {
		return l.GovernorLayout(ctx)
	}
	if f, ok := dev.(governor.Files); ok {
		// A device exposing its sysfs (adb) is discovered directly.
		svc, _ := dev.(governor.Services)
		return governor.Discover(ctx, f, svc)
	}
	return governor.Layout{}, fmt.Errorf("device %s does not describe its CPU clusters: %w", dev.Info().ID, lab.ErrUnsupported)
}

// ResolveProfile turns a --profile value into a profile for dev; nil means
// leave the settings alone.
func ResolveProfile(dev lab.Device, spec string) (*lab.GovernorProfile, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	var raw json.RawMessage
	if strings.HasPrefix(spec, "{") {
		raw = json.RawMessage(spec)
	} else {
		raw, _ = json.Marshal(spec)
	}
	var builtin governor.Resolver
	if b, ok := dev.(Builtins); ok {
		builtin = b.BuiltinProfile
	}
	model := dev.Info().Model
	if model == "" {
		model = dev.Info().ID
	}
	p, err := governor.ResolveField("--profile", raw, model, builtin)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Run applies the profile, streams probe samples to out (which it does not
// close; nil is allowed), judges the window and restores the original
// settings unless opt.Keep. A cancelled check still restores and returns
// the samples taken, with ctx's error.
func Run(ctx context.Context, dev lab.Device, opt Options, out chan<- lab.ProbeSample) (res Result, err error) {
	pr, err := ProberFor(dev)
	if err != nil {
		return res, err
	}
	if opt.Duration <= 0 {
		opt.Duration = DefaultDuration(dev)
	}
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	if g, err := GovernorFor(dev); err == nil && !opt.sweeping {
		// Settings a killed perflab left are not what to check (nor to
		// take for the original).
		res.Notes = RepairLeftover(ctx, g)
	}
	prof := opt.Resolved
	if prof == nil {
		if prof, err = ResolveProfile(dev, opt.Profile); err != nil {
			return res, err
		}
	}
	if prof != nil {
		g, err := GovernorFor(dev)
		if err != nil {
			return res, err
		}
		orig, err := g.ReadProfile(ctx)
		if err != nil {
			return res, fmt.Errorf("reading the current governor settings: %w", err)
		}
		mism, err := g.ApplyProfile(ctx, *prof)
		if err != nil {
			return res, fmt.Errorf("applying profile %q: %w", prof.Name, err)
		}
		res.Mismatches = mism
		if back, err := g.ReadProfile(ctx); err == nil {
			back.Name = prof.Name
			res.Profile = &back
		}
		if (opt.Keep || prof.Keep) && !opt.sweeping {
			// Left applied on purpose: no later perflab is to undo it.
			if k, ok := g.(governor.Keeper); ok {
				if err := k.KeepApplied(ctx); err != nil {
					return res, err
				}
			}
		}
		if !opt.Keep && !prof.Keep {
			defer func() {
				// Restore even when ctx was cancelled.
				if _, err := Restore(context.WithoutCancel(ctx), g, orig); err == nil {
					res.Restored = true
				}
			}()
		}
	}
	samples := make(chan lab.ProbeSample, 64)
	errc := make(chan error, 1)
	go func() {
		errc <- pr.Probe(ctx, lab.ProbeOptions{DurationS: opt.Duration.Seconds(), IntervalS: opt.Interval.Seconds(),
			Size: opt.Size, Realtime: opt.Realtime}, samples)
		close(samples)
	}()
	for s := range samples {
		res.Samples = append(res.Samples, s)
		if out != nil {
			select {
			case out <- s:
			case <-ctx.Done():
			}
		}
	}
	perr := <-errc
	res.Stability = analysis.StabilityOf(StabilitySamples(res.Samples), opt.Stability)
	if perr != nil {
		return res, perr
	}
	return res, nil
}

// StabilitySamples converts probe samples for analysis.
func StabilitySamples(s []lab.ProbeSample) []analysis.StabilitySample {
	out := make([]analysis.StabilitySample, len(s))
	for i, x := range s {
		out[i] = analysis.StabilitySample{T: x.T, MFLOPS: x.MFLOPS, FreqKHz: x.FreqKHz, TempC: x.TempC}
	}
	return out
}
