package sim_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// runStudy runs exp through the real runner on a fresh simulated phone and
// returns the counted startup times.
func runStudy(t *testing.T, exp *lab.Experiment) []float64 {
	t.Helper()
	dev, err := sim.Open(exp.Device[len("sim:"):], sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var xs []float64
	for e := range lab.NewRunner(dev, exp).Run(context.Background()) {
		switch {
		case e.Type == lab.EventEnd && e.End.Reason != "completed":
			t.Fatalf("run ended %s: %s", e.End.Reason, e.End.Error)
		case e.Type == lab.EventTrial && e.Trial.Counted():
			for _, m := range e.Trial.Metrics {
				if m.Name == "startup_ms" {
					xs = append(xs, m.Value)
				}
			}
		}
	}
	if len(xs) != 2*exp.Trials {
		t.Fatalf("%d counted startup_ms values, want %d", len(xs), 2*exp.Trials)
	}
	return xs
}

func sampleVariance(x []float64) float64 {
	var m, s float64
	for _, v := range x {
		m += v
	}
	m /= float64(len(x))
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x)-1)
}

// TestExampleControlsStudy runs the shipped examples through the runner:
// examples/sim-controls-on.json has at least 7× less startup variance than
// examples/sim-controls-off.json, and switching any single control off in
// the "on" experiment raises the variance.
func TestExampleControlsStudy(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	on, err := lab.LoadExperiment("../../examples/sim-controls-on.json")
	if err != nil {
		t.Fatal(err)
	}
	off, err := lab.LoadExperiment("../../examples/sim-controls-off.json")
	if err != nil {
		t.Fatal(err)
	}
	if on.Trials != 50 || off.Trials != 50 || on.Order != lab.OrderRandom || off.Order != lab.OrderRandom {
		t.Fatalf("examples must be A/A, 50 trials per arm, random order: %+v %+v", on, off)
	}
	if c, tr := on.Builds["control"], on.Builds["treatment"]; c.App != tr.App || c.EffectPct != tr.EffectPct {
		t.Fatalf("not an A/A experiment: %+v", on.Builds)
	}
	vOn, vOff := sampleVariance(runStudy(t, on)), sampleVariance(runStudy(t, off))
	t.Logf("startup_ms variance: controls on %.1f ms², off %.1f ms² (%.1f×)", vOn, vOff, vOff/vOn)
	if vOff < 7*vOn {
		t.Errorf("variance falls only %.1f× with every control on (want ≥ 7×)", vOff/vOn)
	}
	singles := []struct {
		name string
		off  func(*lab.Controls)
	}{
		{"governor", func(c *lab.Controls) { c.Governor = json.RawMessage(`"stock"`) }},
		{"restore_snapshot", func(c *lab.Controls) { c.RestoreSnapshot = false }},
		{"kill_app", func(c *lab.Controls) { c.KillApp = false }},
		{"dismiss_dialogs", func(c *lab.Controls) { c.DismissDialogs = false }},
		{"clock_reset", func(c *lab.Controls) { c.ClockReset = false }},
		{"proxy", func(c *lab.Controls) { c.Proxy = "off" }},
		{"tmpfs", func(c *lab.Controls) { c.Tmpfs = false }},
		{"drop_caches", func(c *lab.Controls) { c.DropCaches = false }},
	}
	for _, s := range singles {
		exp := *on
		s.off(&exp.Controls)
		v := sampleVariance(runStudy(t, &exp))
		t.Logf("  only %-16s off: %.1f ms² (%.1f×)", s.name, v, v/vOn)
		if v < 1.3*vOn {
			t.Errorf("switching %s off: variance %.1f is not clearly above all-on %.1f", s.name, v, vOn)
		}
	}
}
