package check

import (
	"context"
	"testing"
	"time"

	"github.com/perflab/perflab/lab/sim"
)

func TestTuneSimPresets(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, p := range sim.Presets() {
		dev, err := sim.Open(p.Name, sim.Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n := 0
		res, err := Tune(context.Background(), dev, TuneOptions{Duration: 10 * time.Minute}, func(pr Progress) { n = pr.Total })
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		t.Logf("%s: %d candidates in %v", p.Name, n, time.Since(start))
		stock := res.Candidates[0]
		if stock.Summary.Stable() {
			t.Errorf("%s: stock settings judged stable: %+v", p.Name, stock.Summary)
		}
		rec := res.Recommended
		var freqs []int
		for _, c := range rec.Clusters {
			freqs = append(freqs, c.MaxKHz)
		}
		steady := p.SteadyTempC(freqs, rec.GPU.MaxHz)
		t.Logf("%s: recommended %v (steady %.1f °C, trip %.0f °C), stock reasons %q", p.Name, freqs, steady, p.Thermal.TripC, stock.Summary.Reasons)
		if steady >= p.Thermal.TripC {
			t.Errorf("%s: recommendation %v settles at %.1f °C, at or above the %v °C throttling point", p.Name, freqs, steady, p.Thermal.TripC)
		}
		// The recommendation, checked again on a fresh phone, is stable.
		dev2, _ := sim.Open(p.Name, sim.Options{Seed: 2})
		r, err := Run(context.Background(), dev2, Options{Resolved: rec}, nil)
		if err != nil || !r.Stability.Stable() || len(r.Mismatches) != 0 || !r.Restored {
			t.Errorf("%s: recheck: %v %+v mism %v restored %v", p.Name, err, r.Stability, r.Mismatches, r.Restored)
		}
		// And the stock settings, again, are not.
		dev3, _ := sim.Open(p.Name, sim.Options{Seed: 3})
		r, _ = Run(context.Background(), dev3, Options{}, nil)
		if r.Stability.Stable() || len(r.Samples) != 600 {
			t.Errorf("%s: stock recheck stable or short: %+v (%d samples)", p.Name, r.Stability, len(r.Samples))
		}
	}
}
