package tui

import (
	"slices"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
)

// TestPanelHostBusy: the workbench's warnings (live and replay) say the
// host was busy as perflab report does (sessions.HostWarnings).
func TestPanelHostBusy(t *testing.T) {
	plan := &lab.Experiment{Trials: 10, Order: lab.OrderAlternate}
	var evs []lab.Event
	for i := range 20 {
		arm := []string{lab.ArmControl, lab.ArmTreatment}[i%2]
		evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Index: i, Round: i / 2, Arm: arm, Order: lab.OrderAlternate,
			Status: lab.StatusOK, Metrics: []lab.Metric{{Name: "wall_ms", Value: 100 + float64(i%7)}},
			Host: &lab.HostLoad{OtherCPUs: 1.2 + 0.2*float64(i/2%2), Load1: 2.1, CPUs: 2}}})
	}
	f := engine.NewFold(plan)
	for _, e := range evs {
		f.Add(e)
	}
	pd := analyzeSession(f.Inputs(), evs, plan, engine.Options(plan))
	const want = "host busy: other processes used 1.3 CPUs on average during the trials (load average 2.1 on 2 CPUs); timings are noisier than on an idle host"
	if !slices.Contains(pd.warnings, want) {
		t.Errorf("warnings %q lack %q", pd.warnings, want)
	}
}
