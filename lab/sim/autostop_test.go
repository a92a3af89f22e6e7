package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// TestAutoStop runs "stop": "auto" on the simulated phone with every
// control on: a 5% slower treatment is decided a regression well before
// max_trials, an A/A run with a 2% threshold is decided no change, and an
// A/A run with threshold 0 runs to max_trials undecided. The end event
// says why.
func TestAutoStop(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cases := []struct {
		name      string
		effect    float64
		threshold float64
		want      string
		early     bool
	}{
		{"5% slower", 5, 0, "startup_ms regression", true},
		{"A/A within 2%", 0, 2, "startup_ms no change", true},
		{"A/A, threshold 0", 0, 0, "max_trials (40 per arm) reached without a decision on startup_ms", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exp, err := lab.LoadExperiment("../../examples/sim-controls-on.json")
			if err != nil {
				t.Fatal(err)
			}
			exp.Stop, exp.MaxTrials, exp.Threshold = lab.StopAuto, 40, c.threshold
			if c.effect != 0 {
				b := exp.Builds[lab.ArmTreatment]
				b.EffectPct = c.effect
				exp.Builds[lab.ArmTreatment] = b
			}
			if err := exp.Validate(); err != nil {
				t.Fatal(err)
			}
			d, err := sim.Open("pixel", sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			counted := map[string]int{}
			var end *lab.End
			for e := range lab.NewRunner(d, exp).Run(context.Background()) {
				if e.Type == lab.EventTrial && e.Trial.Counted() {
					counted[e.Trial.Arm]++
				}
				if e.Type == lab.EventEnd {
					end = e.End
				}
			}
			if end == nil || end.Reason != "completed" || !strings.Contains(end.Stop, c.want) {
				t.Fatalf("end %+v, want stop reason containing %q", end, c.want)
			}
			n := counted[lab.ArmControl]
			if c.early && !(n < 40 && n >= 2) || !c.early && n != 40 {
				t.Errorf("%d counted control trials (early stop: %v): %s", n, c.early, end.Stop)
			}
			t.Logf("%d+%d trials: %s", counted[lab.ArmControl], counted[lab.ArmTreatment], end.Stop)
		})
	}
}
