package sessions

import (
	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// MetricInputs gathers, from the counted trials among events (status ok,
// not warm-ups), one input per metric with Samples[0] the control values
// and Samples[1] the treatment values, in trial order. Metrics appear in the
// order first seen. With upTo, only the first upTo[0] events are used (a
// replay's position).
func MetricInputs(events []lab.Event, upTo ...int) []analysis.MetricInput {
	if len(upTo) > 0 && upTo[0] >= 0 && upTo[0] < len(events) {
		events = events[:upTo[0]]
	}
	var acc Accumulator
	for i := range events {
		acc.Add(events[i])
	}
	return acc.Inputs()
}

// Accumulator collects metric samples event by event, for live views that
// should not rescan a whole session after every trial.
type Accumulator struct {
	index map[string]int
	ins   []analysis.MetricInput
}

// Add takes one event; only counted trials matter.
func (a *Accumulator) Add(e lab.Event) {
	if e.Type != lab.EventTrial || e.Trial == nil || !e.Trial.Counted() {
		return
	}
	var arm int
	switch e.Trial.Arm {
	case lab.ArmControl:
		arm = 0
	case lab.ArmTreatment:
		arm = 1
	default:
		return
	}
	if a.index == nil {
		a.index = map[string]int{}
	}
	for _, m := range e.Trial.Metrics {
		i, ok := a.index[m.Name]
		if !ok {
			i = len(a.ins)
			a.index[m.Name] = i
			better := m.Better
			if better == "" {
				better = analysis.BetterLower
			}
			a.ins = append(a.ins, analysis.MetricInput{Name: m.Name, Unit: m.Unit, Better: better, Samples: make([][]float64, 2)})
		}
		a.ins[i].Samples[arm] = append(a.ins[i].Samples[arm], m.Value)
	}
}

// Inputs returns the inputs so far. The slices are shared with the
// accumulator; callers must not modify them.
func (a *Accumulator) Inputs() []analysis.MetricInput {
	out := make([]analysis.MetricInput, len(a.ins))
	for i, in := range a.ins {
		in.Samples = [][]float64{in.Samples[0][:len(in.Samples[0]):len(in.Samples[0])], in.Samples[1][:len(in.Samples[1]):len(in.Samples[1])]}
		out[i] = in
	}
	return out
}

// Options returns analysis options from the plan's alpha and confidence,
// with the session's seed for the bootstrap.
func (s *Session) Options() analysis.Options {
	o := analysis.DefaultOptions()
	if s.Header.Plan.Alpha > 0 {
		o.Alpha = s.Header.Plan.Alpha
	}
	if s.Header.Plan.Confidence > 0 {
		o.Confidence = s.Header.Plan.Confidence
	}
	o.Labels = []string{lab.ArmControl, lab.ArmTreatment}
	return o
}
