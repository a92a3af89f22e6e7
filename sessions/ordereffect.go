package sessions

import (
	"fmt"
	"math"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// OrderEffect is the order (carry-over) effect on one metric within a
// stretch of rounds: whether the trial run second in a round differs from
// the first. Each complete round of one control and one treatment trial
// gives the log ratio d = log(B/A); a position effect c (the second trial
// costs e^c times the first) makes d = δ + c in rounds that ran A first and
// δ − c in rounds that ran B first, whatever the A/B difference δ. A drift
// over time moves both trials of a round nearly alike and cancels in d but
// for its step from one trial to the next, so unlike a comparison of raw
// values by position or by order mode it does not pass for an order
// effect. Only random order has rounds of both kinds.
type OrderEffect struct {
	Metric string `json:"metric"`
	AFirst int    `json:"a_first"` // complete rounds that ran control first
	BFirst int    `json:"b_first"` // and treatment first
	// P is Mann–Whitney's two-sided test of d in A-first against B-first
	// rounds; PAdjusted is P after Holm's correction across metrics.
	P         analysis.Float `json:"p"`
	PAdjusted analysis.Float `json:"p_adjusted"`
	// SecondPct estimates c as a change in %: how much more the second
	// trial of a round measures than the first, from the Hodges–Lehmann
	// shift between the two kinds of rounds (2c).
	SecondPct analysis.Float `json:"second_pct"`
}

// Significant reports whether the order effect is significant at alpha
// after the correction.
func (o OrderEffect) Significant(alpha float64) bool {
	return o.PAdjusted.Defined() && float64(o.PAdjusted) < alpha
}

// OrderEffects tests the order effect of every metric in events (one
// regime's, as ChooseRegime picks them): the counted trials of rounds with
// exactly one control and one treatment trial, by which arm ran first.
// Metrics appear in the order first seen.
func OrderEffects(events []lab.Event) []OrderEffect {
	type round struct {
		n          int
		aIdx, bIdx int
		a, b       []lab.Metric
	}
	rounds := map[int]*round{}
	var order []int
	var names []string
	seen := map[string]bool{}
	for i := range events {
		arm, ok := countedArm(&events[i])
		if !ok {
			continue
		}
		t := events[i].Trial
		r := rounds[t.Round]
		if r == nil {
			r = &round{}
			rounds[t.Round] = r
			order = append(order, t.Round)
		}
		r.n++
		if arm == 0 {
			r.aIdx, r.a = t.Index, t.Metrics
		} else {
			r.bIdx, r.b = t.Index, t.Metrics
		}
		for _, m := range t.Metrics {
			if !seen[m.Name] {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
		}
	}
	value := func(ms []lab.Metric, name string) (float64, bool) {
		for _, m := range ms {
			if m.Name == name {
				return m.Value, true
			}
		}
		return 0, false
	}
	out := make([]OrderEffect, 0, len(names))
	ps := make([]analysis.Float, 0, len(names))
	for _, name := range names {
		o := OrderEffect{Metric: name, P: analysis.Float(math.NaN()), SecondPct: analysis.Float(math.NaN())}
		var aFirst, bFirst []float64
		for _, k := range order {
			r := rounds[k]
			if r.n != 2 || r.a == nil || r.b == nil {
				continue
			}
			a, okA := value(r.a, name)
			b, okB := value(r.b, name)
			if !okA || !okB || !(a > 0 && b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
				continue
			}
			if r.aIdx < r.bIdx {
				aFirst = append(aFirst, math.Log(b/a))
			} else {
				bFirst = append(bFirst, math.Log(b/a))
			}
		}
		o.AFirst, o.BFirst = len(aFirst), len(bFirst)
		if len(aFirst) >= 2 && len(bFirst) >= 2 {
			mw, _ := analysis.MannWhitneyU(aFirst, bFirst)
			o.P = mw.P
			if hl := analysis.HodgesLehmann(bFirst, aFirst); hl.Defined() {
				o.SecondPct = analysis.Float(math.Expm1(float64(hl)/2) * 100)
			}
		}
		out = append(out, o)
		ps = append(ps, o.P)
	}
	for i, p := range analysis.Adjust(ps, analysis.CorrectionHolm) {
		out[i].PAdjusted = p
	}
	return out
}

// OrderEffectLines words the order effects for report and replay: one
// line per metric that could be tested, and warnings for the significant
// ones (at alpha, Holm across metrics) or why none could be tested.
func OrderEffectLines(effects []OrderEffect, alpha float64) (lines, warnings []string) {
	untestable := 0
	for _, o := range effects {
		if !o.P.Defined() {
			untestable++
			continue
		}
		lines = append(lines, fmt.Sprintf("order effect %s: the second trial of a round %+.2f%% (A first %d rounds, B first %d; Mann–Whitney p = %s, Holm %s)",
			o.Metric, float64(o.SecondPct), o.AFirst, o.BFirst, analysis.FormatP(float64(o.P), alpha, 3), analysis.FormatP(float64(o.PAdjusted), alpha, 3)))
		if o.Significant(alpha) {
			warnings = append(warnings, fmt.Sprintf(
				"%s: order effect: the trial run second in a round measures %+.2f%% against the first (Holm-adjusted p = %s < %g): a trial carries state into the next; add reset controls",
				o.Metric, float64(o.SecondPct), analysis.FormatP(float64(o.PAdjusted), alpha, 3), alpha))
		}
	}
	if untestable > 0 && untestable == len(effects) && len(effects) > 0 {
		a, b := effects[0].AFirst, effects[0].BFirst
		if a+b > 0 {
			lines = append(lines, fmt.Sprintf("order effect: not tested (%d rounds ran A first, %d B first; random order gives both kinds)", a, b))
		}
	}
	return lines, warnings
}
