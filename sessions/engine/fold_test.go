package engine

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

func trialEv(t float64, arm string, warm bool, status, order string, v float64) lab.Event {
	tr := &lab.Trial{Arm: arm, Warmup: warm, Status: status, Duration: 1, Order: order}
	if status == lab.StatusOK {
		tr.Metrics = []lab.Metric{{Name: "m", Unit: "ms", Value: v}}
	}
	return lab.Event{Type: lab.EventTrial, T: t, Trial: tr}
}

func TestFoldProgress(t *testing.T) {
	exp := &lab.Experiment{Trials: 2, Warmup: 1}
	f := NewFold(exp)
	f.Add(trialEv(1, lab.ArmControl, true, lab.StatusOK, "", 1))
	f.Add(trialEv(2, lab.ArmTreatment, true, lab.StatusOK, "", 1))
	f.Add(trialEv(3, lab.ArmControl, false, lab.StatusOK, "", 1))
	f.Add(trialEv(4, lab.ArmTreatment, false, lab.StatusFailed, "", 0))
	p := f.Progress()
	if p.Total != 6 || p.Done != 3 || p.Failed != 1 || p.Counted[lab.ArmControl] != 1 {
		t.Fatalf("progress %+v", p)
	}
	// 4 s spent on 3 useful trials, 3 to go.
	if p.ETA != 4*time.Second {
		t.Errorf("ETA %v, want 4s", p.ETA)
	}
	if fr := p.Fraction(); fr != 0.5 {
		t.Errorf("fraction %v", fr)
	}
	if c := f.Counts(); c.Total != 4 || c.Warmup != 2 || c.ByStatus[lab.StatusFailed] != 1 || c.Counted[lab.ArmControl] != 1 {
		t.Errorf("counts %+v", c)
	}
	if f.Version() != 1 || len(f.Trials()) != 4 {
		t.Errorf("version %d, %d trials", f.Version(), len(f.Trials()))
	}
}

// TestFoldProgressHugePlans: plans at the integer limits give a progress
// that is never negative and an ETA that does not overflow.
func TestFoldProgressHugePlans(t *testing.T) {
	for _, n := range []int{1 << 62, 1<<63 - 1} {
		f := NewFold(&lab.Experiment{Trials: n, Warmup: n})
		f.Add(trialEv(1, lab.ArmControl, true, lab.StatusOK, "", 1))
		p := f.Progress()
		if p.Total != math.MaxInt || p.Done != 1 || p.ETA < 0 || p.Fraction() < 0 || p.Fraction() > 1 {
			t.Errorf("trials %d: progress %+v", n, p)
		}
		if p.Total < 0 || p.Done < 0 || p.ETA < 0 || p.Fraction() < 0 || p.Fraction() > 1 {
			t.Errorf("trials %d: progress %+v", n, p)
		}
	}
}

// TestFoldAgreesWithReport: the live fold's inputs are the ones perflab
// report computes from the file, and it keeps each value's order mode.
func TestFoldAgreesWithReport(t *testing.T) {
	evs := []lab.Event{
		trialEv(1, lab.ArmControl, true, lab.StatusOK, "random", 99),
		trialEv(2, lab.ArmControl, false, lab.StatusOK, "random", 1),
		trialEv(3, lab.ArmTreatment, false, lab.StatusOK, "random", 2),
		trialEv(4, lab.ArmTreatment, false, lab.StatusTimeout, "random", 0),
		trialEv(5, lab.ArmControl, false, lab.StatusOK, "fixed", 3),
		trialEv(6, lab.ArmTreatment, false, lab.StatusOK, "fixed", 4),
	}
	f := NewFold(nil)
	for _, e := range evs {
		f.Add(e)
	}
	got, want := f.Inputs(), sessions.MetricInputs(evs)
	if len(got) != 1 || len(want) != 1 || !slices.Equal(got[0].Samples[0], want[0].Samples[0]) || !slices.Equal(got[0].Samples[1], want[0].Samples[1]) {
		t.Fatalf("fold %+v, report %+v", got, want)
	}
	if !slices.Equal(got[0].Samples[0], []float64{1, 3}) || !slices.Equal(got[0].Samples[1], []float64{2, 4}) {
		t.Errorf("samples %v", got[0].Samples)
	}
	modes, a, b := f.OrderModes(0)
	if !slices.Equal(modes, []string{"random", "fixed"}) || !slices.Equal(a, []uint8{0, 1}) || !slices.Equal(b, []uint8{0, 1}) {
		t.Errorf("order modes %v %v %v", modes, a, b)
	}
}

func TestOptionsFromPlan(t *testing.T) {
	o := Options(&lab.Experiment{Alpha: 0.01, Confidence: 0.9})
	if o.Alpha != 0.01 || o.Confidence != 0.9 || !slices.Equal(o.Labels, []string{lab.ArmControl, lab.ArmTreatment}) {
		t.Errorf("options %+v", o)
	}
	if d := Options(&lab.Experiment{}); d.Alpha != 0.05 || d.Confidence != 0.95 {
		t.Errorf("defaults %+v", d)
	}
}
