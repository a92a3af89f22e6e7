package engine

import (
	"context"
	"math"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// suiteDevice runs a suite's trials with seeded, known metrics: Work costs
// 30% more in B (a little noise), Same is the same with noise well within
// the threshold, Const is the same constant in both (no test).
type suiteDevice struct{ fakeDevice }

func (d *suiteDevice) RunTrial(ctx context.Context, req lab.TrialRequest) lab.TrialResult {
	noise := 1 + 0.004*math.Sin(float64(req.Index)*1.7)
	work, same := 100*noise, 50*(1+0.003*math.Cos(float64(req.Index)*2.3))
	if req.Arm == lab.ArmTreatment {
		work *= 1.3
	}
	return lab.TrialResult{Status: lab.StatusOK, Metrics: []lab.Metric{
		{Name: "Work", Unit: "ns/op", Value: work}, {Name: "Same", Unit: "ns/op", Value: same}, {Name: "Const:B/op", Unit: "B/op", Value: 64}}}
}

// runSuiteStopAuto runs the fake suite device's session with stop auto
// and the suite's metrics families (metrics; "" one family of all), and
// checks it ended decided on Work and Same.
func runSuiteStopAuto(t *testing.T, metrics string) *sessions.Session {
	t.Helper()
	plan := testPlan(0)
	plan.Stop, plan.MaxTrials, plan.Threshold, plan.Order = lab.StopAuto, 100, 5, lab.OrderRandom
	plan.Suite = &lab.SuiteInfo{Module: "m", Metrics: metrics}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if _, err := RunSession(context.Background(), fakeLab(&suiteDevice{}), Plan{Experiment: plan, Path: path, Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	s, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	end := s.End()
	if end == nil || !regexp.MustCompile(`^decided after \d+ rounds \(\d+ of the benchmark run most\): every tested benchmark metric decided \(2 tested metrics: 1 no change, 1 regression\)$`).MatchString(end.Stop) {
		t.Fatalf("end %+v", end)
	}
	return s
}

// TestSuiteStopAuto: a suite with stop auto ends once every tested
// benchmark is decided, and the report's verdicts (engine.Options, the
// analysis every view uses) are the stop reason's: Work a regression,
// Same no change, Const no member.
func TestSuiteStopAuto(t *testing.T) {
	s := runSuiteStopAuto(t, "")
	if n := len(s.Trials()); n >= 200 {
		t.Errorf("ran %d trials: never stopped early", n)
	}
	rep := Analyse(&s.Header.Plan, sessions.ArmInputs(s.Events, 2), Options(&s.Header.Plan)).Report
	want := map[string]string{"Work": analysis.VerdictRegression, "Same": analysis.VerdictNoChange, "Const:B/op": analysis.VerdictInconclusive}
	for _, m := range rep.Metrics {
		if m.Verdict != want[m.Name] {
			t.Errorf("%s: report says %s, want %s", m.Name, m.Verdict, want[m.Name])
		}
	}
}

// TestSuiteStopAutoFamilies: with the suite's families (perflab suite's
// default) the stop rule decides on the same families as the report:
// Work a regression and Same no change in the time family, Const shown and
// not tested (the same in every round), holding nothing up.
func TestSuiteStopAutoFamilies(t *testing.T) {
	s := runSuiteStopAuto(t, lab.DefaultSuiteMetrics)
	a := Analyse(&s.Header.Plan, sessions.ArmInputs(s.Events, 2), Options(&s.Header.Plan))
	want := map[string]string{"Work": analysis.VerdictRegression, "Same": analysis.VerdictNoChange, "Const:B/op": "not tested (64 in every round)"}
	for _, m := range a.Report.Metrics {
		if m.Verdict != want[m.Name] {
			t.Errorf("%s: report says %s, want %s", m.Name, m.Verdict, want[m.Name])
		}
	}
	if len(a.Families) != 1 || a.Families[0] != (analysis.FamilySize{Name: lab.FamilyTime, Metrics: 2, Tested: 2}) {
		t.Errorf("families %+v", a.Families)
	}
}
