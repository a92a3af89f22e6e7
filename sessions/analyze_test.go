package sessions

import (
	"testing"

	"github.com/perflab/perflab/lab"
)

// bigEvents returns n counted trials alternating control and treatment,
// each with three metrics, as `perflab report` sees a 100,000-trial
// session.
func bigEvents(n int) []lab.Event {
	events := make([]lab.Event, n)
	for i := range events {
		arm := lab.ArmControl
		if i%2 == 1 {
			arm = lab.ArmTreatment
		}
		v := float64(i%97) / 13
		events[i] = lab.Event{Type: lab.EventTrial, T: float64(i), Trial: &lab.Trial{Index: i, Arm: arm, Status: lab.StatusOK,
			Metrics: []lab.Metric{{Name: "wall_ms", Value: 10 + v, Unit: "ms"}, {Name: "user_ms", Value: 8 + v, Unit: "ms"},
				{Name: "sys_ms", Value: 1 + v, Unit: "ms"}}}}
	}
	return events
}

// TestMetricInputsMetricOrder: trials that list their metrics in a
// different order, or only some of them, still land in the right inputs.
func TestMetricInputsMetricOrder(t *testing.T) {
	trial := func(arm string, ms ...lab.Metric) lab.Event {
		return lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Arm: arm, Status: lab.StatusOK, Metrics: ms}}
	}
	x := func(v float64) lab.Metric { return lab.Metric{Name: "x", Value: v} }
	y := func(v float64) lab.Metric { return lab.Metric{Name: "y", Value: v, Better: "higher"} }
	ins := MetricInputs([]lab.Event{
		trial(lab.ArmControl, x(1), y(2)),
		trial(lab.ArmTreatment, y(3), x(4)),
		trial(lab.ArmControl, y(5)),
		trial(lab.ArmTreatment, x(6), x(7)),
	})
	if len(ins) != 2 || ins[0].Name != "x" || ins[1].Name != "y" || ins[1].Better != "higher" {
		t.Fatalf("inputs %+v", ins)
	}
	want := [][][]float64{{{1}, {4, 6, 7}}, {{2, 5}, {3}}}
	for i, in := range ins {
		for arm := range 2 {
			got := in.Samples[arm]
			if len(got) != len(want[i][arm]) {
				t.Fatalf("%s arm %d: %v, want %v", in.Name, arm, got, want[i][arm])
			}
			for k := range got {
				if got[k] != want[i][arm][k] {
					t.Fatalf("%s arm %d: %v, want %v", in.Name, arm, got, want[i][arm])
				}
			}
		}
	}
}

// BenchmarkMetricInputs100k gathers the inputs of 100,000 trials with
// three metrics each.
func BenchmarkMetricInputs100k(b *testing.B) {
	events := bigEvents(100_000)
	for b.Loop() {
		if ins := MetricInputs(events); len(ins) != 3 || len(ins[0].Samples[1]) != 50_000 {
			b.Fatal(ins)
		}
	}
}
