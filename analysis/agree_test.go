package analysis

import "testing"

func TestAgree(t *testing.T) {
	tested := func(name, verdict string) MetricResult {
		return MetricResult{Name: name, Verdict: verdict, PAdjusted: 0.01}
	}
	untested := func(name string) MetricResult {
		return MetricResult{Name: name, Verdict: VerdictInconclusive, PAdjusted: undefined()}
	}
	a := Report{Metrics: []MetricResult{
		tested("Slower", VerdictRegression), tested("Faster", VerdictImprovement), tested("Flat", VerdictNoChange),
		tested("Flip", VerdictRegression), tested("Unsure", VerdictInconclusive), untested("Const"), tested("OnlyA", VerdictNoChange),
		untested("HalfTested"),
	}}
	b := Report{Metrics: []MetricResult{
		tested("Faster", VerdictImprovement), tested("Slower", VerdictRegression), tested("Flat", VerdictInconclusive),
		tested("Flip", VerdictImprovement), tested("Unsure", VerdictRegression), untested("Const"), tested("OnlyB", VerdictNoChange),
		tested("HalfTested", VerdictNoChange),
	}}
	got := Agree(a, b)
	want := map[string]bool{"Slower": true, "Faster": true, "Flat": true, "Flip": false, "Unsure": false, "HalfTested": true}
	if got.Total != len(want) || got.Agree != 4 || got.UntestedInBoth != 1 || len(got.OnlyA) != 1 || got.OnlyA[0] != "OnlyA" || len(got.OnlyB) != 1 || got.OnlyB[0] != "OnlyB" {
		t.Fatalf("Agree = %+v", got)
	}
	for _, r := range got.Rows {
		if r.Agree != want[r.Metric] {
			t.Errorf("%s: %s vs %s agree=%v, want %v", r.Metric, r.A, r.B, r.Agree, want[r.Metric])
		}
	}
	if s := got.Share(); float64(s) != 4.0/6 {
		t.Errorf("share %v", s)
	}
	if (Agreement{}).Share().Defined() {
		t.Error("share of nothing is defined")
	}
}
