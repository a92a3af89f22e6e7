package tui

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// TestPanelOrderP: the p-value panel's "order p" is the analysed regime's
// order effect (sessions.OrderEffects): a random-order session whose
// second trial of a round runs 3% slower shows it, with a warning; the
// same session without the carry-over but with a drift of 2% over the run
// does not warn.
func TestPanelOrderP(t *testing.T) {
	session := func(carry, drift float64) []lab.Event {
		rng := rand.New(rand.NewPCG(9, 9))
		var evs []lab.Event
		idx := 0
		for r := range 60 {
			arms := []string{lab.ArmControl, lab.ArmTreatment}
			if rng.IntN(2) == 0 {
				arms[0], arms[1] = arms[1], arms[0]
			}
			for pos, arm := range arms {
				v := (100 + drift*float64(idx)) * (1 + 0.002*rng.NormFloat64())
				if pos == 1 {
					v *= 1 + carry
				}
				evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Index: idx, Round: r, Arm: arm, Order: lab.OrderRandom,
					Status: lab.StatusOK, Metrics: []lab.Metric{{Name: "startup_ms", Value: v}}}})
				idx++
			}
		}
		return evs
	}
	plan := &lab.Experiment{Trials: 60, Order: lab.OrderRandom}
	panel := func(evs []lab.Event) panelData {
		f := engine.NewFold(plan)
		for _, e := range evs {
			f.Add(e)
		}
		return analyzeSession(f.Inputs(), evs, plan, engine.Options(plan))
	}
	warned := func(pd panelData) bool {
		for _, w := range pd.warnings {
			if strings.Contains(w, "order effect") {
				return true
			}
		}
		return false
	}
	pd := panel(session(0.03, 0))
	if p := pd.metrics[0].kwP; math.IsNaN(p) || p >= 0.001 || !warned(pd) {
		t.Errorf("carry-over: order p %v, warnings %q", p, pd.warnings)
	}
	st := NewStyles(true, true)
	pp := newPPane(&st, pd)
	pp.SetSize(120, 5)
	if !strings.Contains(pp.View(), "order p") {
		t.Errorf("the p-value panel lacks the order p column")
	}
	pd = panel(session(0, 0.02))
	if p := pd.metrics[0].kwP; math.IsNaN(p) || p < 0.05 || warned(pd) {
		t.Errorf("drift: order p %v, warnings %q", p, pd.warnings)
	}
}
