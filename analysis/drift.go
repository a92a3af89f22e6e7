package analysis

import "fmt"

// minTrendWarnN is the smallest sample for which a significant Spearman
// trend is reported as a warning: the t approximation behind its p-value
// is poor for tiny samples.
const minTrendWarnN = 8

// warnDrift warns of each arm whose values drift with trial order
// (Spearman's correlation with position, MetricResult.Trend). The tests of
// every metric and arm form one family: their p-values are adjusted with
// Holm's step-down method (Holm 1979, as R's p.adjust "holm") and an arm
// warns when its adjusted p is below alpha, so an A/A run of independent,
// identically distributed trials warns at most about alpha of the time
// however many metrics it has (uncorrected: 10% with 1 metric, 29% with 3).
func warnDrift(ms []MetricResult, alpha float64) {
	type arm struct {
		metric int
		name   string
		c      Correlation
	}
	var arms []arm
	var ps []Float
	for i := range ms {
		m := &ms[i]
		for _, x := range []struct {
			name string
			s    Summary
			c    Correlation
		}{{"A", m.A, m.Trend.A}, {"B", m.B, m.Trend.B}} {
			if x.s.N < minTrendWarnN || x.s.SD == 0 || !x.c.P.Defined() {
				continue
			}
			arms = append(arms, arm{i, x.name, x.c})
			ps = append(ps, x.c.P)
		}
	}
	adj := Adjust(ps, CorrectionHolm)
	for k, a := range arms {
		if !adj[k].Defined() || float64(adj[k]) >= alpha {
			continue
		}
		m := &ms[a.metric]
		m.Warnings = append(m.Warnings, fmt.Sprintf(
			"%s may drift with trial order (Spearman rho=%.2f, p=%s; Holm over %d arms: %s): trials may not be independent",
			a.name, float64(a.c.Rho), FormatP(float64(a.c.P), alpha, 3), len(arms), FormatP(float64(adj[k]), alpha, 3)))
	}
}
