package analysis

import "sort"

// Agreement is how far two experiments on the same metrics agree, as
// ElastiBench (Grambow et al., the seed's repeated experiments, 95.65%
// of benchmarks agreeing) defines it: two runs agree on a benchmark when
// both find the same direction of change (both a regression, or both an
// improvement), or both find none (no change or inconclusive in each).
type Agreement struct {
	Rows []AgreementRow `json:"rows"`
	// Agree of Total metrics tested in at least one run agree; metrics
	// that neither run could test (a constant in both arms) are
	// UntestedInBoth, not counted.
	Agree          int      `json:"agree"`
	Total          int      `json:"total"`
	UntestedInBoth int      `json:"untested_in_both"`
	OnlyA          []string `json:"only_a,omitempty"` // metrics of the first run only
	OnlyB          []string `json:"only_b,omitempty"`
}

// AgreementRow is one metric of both runs.
type AgreementRow struct {
	Metric string `json:"metric"`
	A      string `json:"a"` // the first run's verdict
	B      string `json:"b"`
	Agree  bool   `json:"agree"`
}

// Share is Agree/Total (NaN for no metric).
func (a Agreement) Share() Float {
	if a.Total == 0 {
		return undefined()
	}
	return Float(float64(a.Agree) / float64(a.Total))
}

// direction is a verdict's change: +1 regression, −1 improvement, 0 none
// found (no change, inconclusive).
func direction(verdict string) int {
	switch verdict {
	case VerdictRegression:
		return 1
	case VerdictImprovement:
		return -1
	}
	return 0
}

// Agree compares two reports metric by metric, in the first's order.
func Agree(a, b Report) Agreement {
	var out Agreement
	byName := map[string]MetricResult{}
	for _, m := range b.Metrics {
		byName[m.Name] = m
	}
	seen := map[string]bool{}
	for _, ma := range a.Metrics {
		seen[ma.Name] = true
		mb, ok := byName[ma.Name]
		if !ok {
			out.OnlyA = append(out.OnlyA, ma.Name)
			continue
		}
		if !ma.PAdjusted.Defined() && !mb.PAdjusted.Defined() {
			out.UntestedInBoth++
			continue
		}
		row := AgreementRow{Metric: ma.Name, A: ma.Verdict, B: mb.Verdict, Agree: direction(ma.Verdict) == direction(mb.Verdict)}
		out.Rows = append(out.Rows, row)
		out.Total++
		if row.Agree {
			out.Agree++
		}
	}
	for _, mb := range b.Metrics {
		if !seen[mb.Name] {
			out.OnlyB = append(out.OnlyB, mb.Name)
		}
	}
	sort.Strings(out.OnlyA)
	sort.Strings(out.OnlyB)
	return out
}
