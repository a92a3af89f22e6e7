package study

import (
	"context"
	"slices"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/internal/calibration"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// Issue 15 item 7: validate over a pool of four simulated Pixel 3 phones
// whose speeds differ by up to 10% (slowdown 1, 1.033, 1.067, 1.1): the
// paired per-round ratios remove each phone's offset, so the primary
// (signed-rank) test's A/A rate lies inside the binomial band around α.
// A pool of simulated phones is a deterministic schedule (lab.Pool), so
// the counts below are the same on every run.
//
// What validate counts as a false positive is a verdict of a change,
// which needs the test significant AND the bootstrap interval of the
// median ratio to exclude 0; the two disagree often enough at 20 pairs
// that the verdict rate sits below the band, on one phone as on the pool
// (by hand over 2,000 experiments, see TestPoolAARateByHand: test 88,
// verdict 67 on the pool; test 78, verdict 52 on one phone). The test
// asserts that it is never above the test's own rate nor the band.
// The test runs 60 A/A experiments (seeded); the full study of 400, whose
// figures README.md quotes, runs with bench/calibration.sh.
func TestValidateOverAPoolOfUnequalPhones(t *testing.T) {
	aa := calibration.Size(60, 400)
	exp := feedExperiment(20, controlsOn())
	exp.Device, exp.Devices = "", []string{"sim:pixel", "sim:pixel#2", "sim:pixel#3", "sim:pixel#4"}
	v, err := Validate(context.Background(), ValidateConfig{Experiment: exp, Devices: unequalPool(), AA: aa}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, opt := poolAA(t, aa, false)
	c := countAA(t, data, opt)
	lo, hi := analysis.BinomialRange(aa, 0.05, 0.95)
	t.Logf("pool A/A over %d: signed-rank p<α %d (accept %d–%d), interval excludes 0 %d, verdict %d (validate: %d/%d)",
		c.Runs, c.TestSig, lo, hi, c.IntervalExcl, c.Verdict, v.AA.FalsePositives, v.AA.Experiments)
	if c.Runs != aa || c.TestSig < lo || c.TestSig > hi {
		t.Errorf("A/A over the pool: the signed-rank test rejected %d/%d, outside %d–%d", c.TestSig, c.Runs, lo, hi)
	}
	if v.AA.Experiments != aa || v.AA.FalsePositives != c.Verdict {
		t.Errorf("validate counted %d/%d false positives, the same runs analysed here give %d/%d", v.AA.FalsePositives, v.AA.Experiments, c.Verdict, c.Runs)
	}
	// The paired interval inverts the signed-rank test, so the verdicts of
	// a change are the test's rejections, and inside the band too.
	if c.Verdict != c.TestSig || c.IntervalExcl != c.TestSig || c.Verdict < lo || c.Verdict > hi {
		t.Errorf("A/A over the pool: %d verdicts of a change and %d intervals excluding 0, want the test's %d rejections, inside %d–%d",
			c.Verdict, c.IntervalExcl, c.TestSig, lo, hi)
	}
}

// The same seeded pool of simulated phones gives the same session: each
// trial on the same device, in the same round, with the same value.
func TestPoolOfSimulatedPhonesIsDeterministic(t *testing.T) {
	first, _ := poolAA(t, 6, false)
	again, _ := poolAA(t, 6, false)
	devices := map[string]bool{}
	for i := range first {
		a, b := first[i].trials, again[i].trials
		if len(a) != len(b) {
			t.Fatalf("run %d: %d trials, then %d", i, len(a), len(b))
		}
		for k := range a {
			x, y := a[k], b[k]
			devices[x.Device] = true
			if x.Device != y.Device || x.Round != y.Round || x.Arm != y.Arm || x.Index != y.Index || !slices.Equal(x.Metrics, y.Metrics) {
				t.Fatalf("run %d trial %d: %s round %d %s %v, then %s round %d %s %v", i, k,
					x.Device, x.Round, x.Arm, x.Metrics, y.Device, y.Round, y.Arm, y.Metrics)
			}
		}
	}
	if len(devices) != 4 {
		t.Errorf("trials ran on %v, want all four phones", devices)
	}
}

// unequalPool opens four simulated Pixel 3 phones whose speeds differ by
// up to 10% (slowdown 1, 1.033, 1.067, 1.1) as one device set.
func unequalPool() Devices {
	slow := []float64{1, 1 + 0.1/3, 1 + 0.2/3, 1.1}
	return Devices{Fresh: true, SimTime: true, Open: func(ctx context.Context, seed int64) (lab.Device, error) {
		set := &lab.DeviceSet{}
		for i, s := range slow {
			d, err := sim.Open("pixel", sim.Options{Seed: lab.MemberSeed(seed, i), Slowdown: s})
			if err != nil {
				return nil, err
			}
			set.Members = append(set.Members, poolSim{d, i})
		}
		return set, nil
	}}
}

// poolSim gives each simulated phone of a set its own ID.
type poolSim struct {
	*sim.Device
	i int
}

func (p poolSim) Info() lab.DeviceInfo {
	info := p.Device.Info()
	if p.i > 0 {
		info.ID += "#" + string(rune('1'+p.i))
	}
	return info
}
