package sessions

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// orderSession builds the counted trials of rounds of one control and one
// treatment trial. first(r) says whether round r runs control first; the
// value of a trial is 100 plus drift per trial index, times (1+carry) when
// it runs second in its round, with 0.2% noise. A/A: no A/B difference.
func orderSession(rounds int, first func(r int) bool, drift, carry float64, seed uint64) []lab.Event {
	rng := rand.New(rand.NewPCG(seed, 1))
	var evs []lab.Event
	idx := 0
	for r := range rounds {
		arms := []string{lab.ArmControl, lab.ArmTreatment}
		order := lab.OrderRandom
		if !first(r) {
			arms[0], arms[1] = arms[1], arms[0]
		}
		for pos, arm := range arms {
			v := (100 + drift*float64(idx)) * (1 + 0.002*rng.NormFloat64())
			if pos == 1 {
				v *= 1 + carry
			}
			evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Index: idx, Round: r, Arm: arm, Order: order,
				Status: lab.StatusOK, Metrics: []lab.Metric{{Name: "ms", Value: v}}}})
			idx++
		}
	}
	return evs
}

// TestOrderEffects: a strong drift over time is not an order effect
// (both trials of a round move alike), a carry-over of 3% onto the second
// trial of a round is, and alternate order (always A first) cannot be
// tested.
func TestOrderEffects(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	random := func(int) bool { return rng.IntN(2) == 0 }
	check := func(name string, evs []lab.Event, wantSig bool, wantPct float64) {
		t.Helper()
		o := OrderEffects(evs)
		if len(o) != 1 || o[0].Metric != "ms" {
			t.Fatalf("%s: %+v", name, o)
		}
		e := o[0]
		if e.Significant(0.05) != wantSig {
			t.Errorf("%s: p %v (Holm %v), significant %v, want %v", name, e.P, e.PAdjusted, e.Significant(0.05), wantSig)
		}
		if !math.IsNaN(wantPct) && math.Abs(float64(e.SecondPct)-wantPct) > 0.5 {
			t.Errorf("%s: second trial %+.2f%%, want about %+.2f%%", name, float64(e.SecondPct), wantPct)
		}
		if e.AFirst+e.BFirst != 60 {
			t.Errorf("%s: %d+%d rounds, want 60", name, e.AFirst, e.BFirst)
		}
	}
	// A drift of 0.02% of the mean per trial moves the values 2.4% over
	// the run, 12 times the noise, but a round's second trial only by its
	// one step.
	check("drift", orderSession(60, random, 0.02, 0, 1), false, 0.02)
	check("carry-over", orderSession(60, random, 0, 0.03, 2), true, 3)
	check("drift and carry-over", orderSession(60, random, 0.02, 0.03, 3), true, 3)

	alt := OrderEffects(orderSession(60, func(int) bool { return true }, 0, 0.03, 4))
	if alt[0].P.Defined() || alt[0].AFirst != 60 || alt[0].BFirst != 0 {
		t.Errorf("alternate: %+v", alt[0])
	}
	lines, warns := OrderEffectLines(alt, 0.05)
	if len(lines) != 1 || !strings.Contains(lines[0], "not tested (60 rounds ran A first, 0 B first") || len(warns) != 0 {
		t.Errorf("alternate: lines %q warnings %q", lines, warns)
	}
	lines, warns = OrderEffectLines(OrderEffects(orderSession(60, random, 0, 0.03, 2)), 0.05)
	if len(lines) != 1 || len(warns) != 1 || !strings.Contains(warns[0], "order effect") {
		t.Errorf("carry-over: lines %q warnings %q", lines, warns)
	}
}
