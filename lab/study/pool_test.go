package study

import (
	"context"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/sim"
)

// Issue 15 item 7: validate over a pool of four simulated Pixel 3 phones
// whose speeds differ by up to 10% (slowdown 1, 1.033, 1.067, 1.1) keeps
// the A/A false-positive rate inside the binomial band around α: the
// paired per-round ratios remove each phone's offset.
func TestValidateOverAPoolOfUnequalPhones(t *testing.T) {
	const aa = 400
	slow := []float64{1, 1 + 0.1/3, 1 + 0.2/3, 1.1}
	devs := Devices{Fresh: true, SimTime: true, Open: func(ctx context.Context, seed int64) (lab.Device, error) {
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
	exp := feedExperiment(20, controlsOn())
	exp.Device, exp.Devices = "", []string{"sim:pixel", "sim:pixel#2", "sim:pixel#3", "sim:pixel#4"}
	v, err := Validate(context.Background(), ValidateConfig{Experiment: exp, Devices: devs, AA: aa}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := analysis.BinomialRange(aa, 0.05, 0.95)
	t.Logf("pool A/A: %d/%d false positives (accept %d–%d)", v.AA.FalsePositives, v.AA.Experiments, lo, hi)
	if v.AA.Experiments != aa || v.AA.FalsePositives < lo || v.AA.FalsePositives > hi {
		t.Errorf("A/A over the pool: %d/%d false positives, outside %d–%d", v.AA.FalsePositives, v.AA.Experiments, lo, hi)
	}
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
