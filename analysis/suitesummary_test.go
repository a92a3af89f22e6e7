package analysis

import (
	"strings"
	"testing"
)

// TestSuiteSummaryNamesChangesBelowThreshold: the summary's first line
// counts the verdicts, and among the inconclusive benchmarks names those
// whose change is significant with an estimate below the threshold (a
// change the run found, of a size it cannot place), with their Δ.
func TestSuiteSummaryNamesChangesBelowThreshold(t *testing.T) {
	metric := func(name, verdict string, delta float64, below bool) MetricResult {
		return MetricResult{Name: name, Unit: "ns/op", Verdict: verdict, PAdjusted: defined(0.01),
			Decision: Decision{DeltaPct: defined(delta), BelowThreshold: below, N: 100}}
	}
	for _, tc := range []struct {
		name    string
		metrics []MetricResult
		want    string
	}{
		{"one below", []MetricResult{
			metric("p.A", VerdictRegression, 12.1, false), metric("p.B", VerdictNoChange, 0.2, false),
			metric("p.C", VerdictInconclusive, 4.73, true), metric("p.D", VerdictInconclusive, 1, false),
		}, "1 of 4 benchmarks changed: 1 slower (p.A +12.10%); 1 no change, 2 inconclusive (1 of them significant, with an estimate below the ±5% threshold: p.C +4.73%)"},
		{"none below", []MetricResult{
			metric("p.B", VerdictNoChange, 0.2, false), metric("p.D", VerdictInconclusive, 1, false),
		}, "0 of 2 benchmarks changed; 1 no change, 1 inconclusive"},
	} {
		r := Report{Metrics: tc.metrics, ThresholdPct: 5, Alpha: 0.05}
		first, _, _ := strings.Cut(suiteSummary(r, nil), "\n")
		if first != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, first, tc.want)
		}
	}
}
