package cli

import (
	"context"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions/study"
	"github.com/perflab/perflab/tui"
)

// drainStudy reads a study stream to its end and returns the progress
// count and the last update.
func drainStudy(ch <-chan study.Update) (int, study.Update) {
	n := 0
	var last study.Update
	for u := range ch {
		if u.Progress != nil {
			n++
		}
		last = u
	}
	return n, last
}

// TestWorkbenchStudiesRunOnSim checks the wiring of the workbench's study
// modes: the shared device construction, and the stepper's "effect off"
// meaning no effect experiments even on sim (where perflab validate
// defaults to 1%).
func TestWorkbenchStudiesRunOnSim(t *testing.T) {
	exp := func() *lab.Experiment {
		return &lab.Experiment{Device: "sim:pixel", Trials: 5, Order: lab.OrderRandom, Seed: 3,
			Builds: map[string]lab.Build{lab.ArmControl: {Name: "feed", App: "feed"}, lab.ArmTreatment: {Name: "feed+5%", App: "feed", EffectPct: 5}}}
	}
	ctx := context.Background()
	n, last := drainStudy(startStudy(ctx, devices.Options{}, tui.StudyPlan{Study: tui.StudyValidate, Experiment: exp(), AA: 4}))
	if last.Err != nil || last.Validation == nil {
		t.Fatalf("validate: %v", last.Err)
	}
	if v := last.Validation; n != 4 || v.AA.Experiments != 4 || v.Effect.Experiments != 0 {
		t.Errorf("validate: %d progress updates, %d A/A and %d effect experiments; want 4, 4 and none", n, v.AA.Experiments, v.Effect.Experiments)
	}
	n, last = drainStudy(startStudy(ctx, devices.Options{}, tui.StudyPlan{Study: tui.StudyValidate, Experiment: exp(), AA: 3, EffectPct: 5}))
	if v := last.Validation; v == nil || n != 6 || !v.Effect.Injected || v.Effect.EffectPct != 5 || v.Effect.Experiments != 3 {
		t.Errorf("validate with effect: %d updates, result %+v (err %v)", n, v, last.Err)
	}
	n, last = drainStudy(startStudy(ctx, devices.Options{}, tui.StudyPlan{Study: tui.StudyOrder, Experiment: exp(), Runs: 2}))
	if o := last.Order; o == nil || n != 4 || o.Runs != 2 {
		t.Errorf("order: %d updates, result %+v (err %v)", n, o, last.Err)
	}
}

func TestStudyDevicesFreshOnlyForPacedSim(t *testing.T) {
	for _, c := range []struct {
		id       string
		realtime bool
		fresh    bool
	}{{"sim:pixel", false, true}, {"sim:pixel", true, false}, {"local", false, false}, {"adb:X", false, false}} {
		if got := studyDevices(c.id, devices.Options{Realtime: c.realtime}, 2); got.Fresh != c.fresh || got.Parallel != 2 || got.Open == nil {
			t.Errorf("%s realtime %v: fresh %v, want %v", c.id, c.realtime, got.Fresh, c.fresh)
		}
	}
}
