package sessions

import (
	"fmt"
	"math"
	"slices"
	"sync"

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
	names, span := countedMetrics(events)
	rounds := countedRounds(events, span)
	r := ratiosByFirst(events, rounds, names)
	return r.test(names)
}

// roundSpan is the span of round numbers of the counted trials, and how
// many there are.
type roundSpan struct{ lo, hi, counted int }

// countedMetrics returns the metric names of the counted trials in the
// order first seen, and the span of their rounds.
func countedMetrics(events []lab.Event) ([]string, roundSpan) {
	span := roundSpan{lo: math.MaxInt, hi: math.MinInt}
	var names []string
	var seen map[string]bool // once names grows past a few
	for i := range events {
		if _, ok := countedArm(&events[i]); !ok {
			continue
		}
		t := events[i].Trial
		span.lo, span.hi, span.counted = min(span.lo, t.Round), max(span.hi, t.Round), span.counted+1
		for j := range t.Metrics {
			name := t.Metrics[j].Name
			if j < len(names) && names[j] == name {
				continue // trials usually list their metrics alike
			}
			switch {
			case seen != nil:
				if seen[name] {
					continue
				}
				seen[name] = true
			case slices.Contains(names, name):
				continue
			case len(names) >= 16:
				seen = map[string]bool{name: true}
				for _, n := range names {
					seen[n] = true
				}
			}
			names = append(names, name)
		}
	}
	return names, span
}

// orderRound is one round's counted trials: how many, and the events
// (index + 1; 0: none) of its control trial and of its other one.
type orderRound struct{ n, a, b int }

// complete reports whether the round has exactly one control and one
// treatment trial.
func (r orderRound) complete() bool { return r.n == 2 && r.a > 0 && r.b > 0 }

// countedRounds groups the counted trials by round. Rounds are numbered
// densely, so a slice over their span holds them (a map when they are
// sparse).
func countedRounds(events []lab.Event, span roundSpan) []orderRound {
	var rounds []orderRound
	var slot func(r int) *orderRound
	if span.counted > 0 && uint(span.hi-span.lo) < uint(2*span.counted+1024) {
		rounds = make([]orderRound, span.hi-span.lo+1)
		slot = func(r int) *orderRound { return &rounds[r-span.lo] }
	} else {
		at := map[int]int{}
		slot = func(r int) *orderRound {
			k, ok := at[r]
			if !ok {
				k = len(rounds)
				at[r] = k
				rounds = append(rounds, orderRound{})
			}
			return &rounds[k]
		}
	}
	for i := range events {
		arm, ok := countedArm(&events[i])
		if !ok {
			continue
		}
		r := slot(events[i].Trial.Round)
		r.n++
		if arm == 0 {
			r.a = i + 1
		} else {
			r.b = i + 1
		}
	}
	return rounds
}

// metricValue returns the value of metric k (names[k]) in ms, the first
// one of that name; aligned says ms's first k metrics are names[:k], so
// none of them has that name.
func metricValue(ms []lab.Metric, names []string, k int, aligned *bool) (float64, bool) {
	if *aligned && k < len(ms) && ms[k].Name == names[k] {
		return ms[k].Value, true
	}
	*aligned = false
	for _, m := range ms {
		if m.Name == names[k] {
			return m.Value, true
		}
	}
	return 0, false
}

// roundRatios holds the ratios b/a of each metric's complete rounds: the
// ratios of metric k are buf[k*complete:(k+1)*complete], A-first rounds
// filling it from the front (nA[k] of them), B-first rounds from the back
// (nB[k]); the tests do not depend on the values' order.
type roundRatios struct {
	buf      []float64
	complete int
	nA, nB   []int
}

// ratiosByFirst gathers the ratios b/a of every metric in the complete
// rounds, by which arm ran first; values that are not positive and finite
// are left out.
func ratiosByFirst(events []lab.Event, rounds []orderRound, names []string) roundRatios {
	complete := 0
	for _, r := range rounds {
		if r.complete() {
			complete++
		}
	}
	rr := roundRatios{buf: make([]float64, complete*len(names)), complete: complete,
		nA: make([]int, len(names)), nB: make([]int, len(names))}
	for _, r := range rounds {
		if !r.complete() {
			continue
		}
		ta, tb := events[r.a-1].Trial, events[r.b-1].Trial
		if ta.Metrics == nil || tb.Metrics == nil {
			continue
		}
		alignedA, alignedB := true, true
		for k := range names {
			a, okA := metricValue(ta.Metrics, names, k, &alignedA)
			b, okB := metricValue(tb.Metrics, names, k, &alignedB)
			if !okA || !okB || !(a > 0 && b > 0) || math.IsInf(a, 0) || math.IsInf(b, 0) {
				continue
			}
			vs := rr.buf[k*complete : (k+1)*complete]
			if ta.Index < tb.Index { // the logarithms are taken side by side in test
				vs[rr.nA[k]] = b / a
				rr.nA[k]++
			} else {
				rr.nB[k]++
				vs[complete-rr.nB[k]] = b / a
			}
		}
	}
	return rr
}

// test compares, for each metric, the log ratios of A-first rounds with
// those of B-first rounds (Mann–Whitney and the Hodges–Lehmann shift),
// Holm-adjusted across metrics.
func (rr roundRatios) test(names []string) []OrderEffect {
	out := make([]OrderEffect, len(names))
	var wg sync.WaitGroup
	for k, name := range names {
		o := &out[k]
		*o = OrderEffect{Metric: name, P: analysis.Float(math.NaN()), SecondPct: analysis.Float(math.NaN())}
		vs := rr.buf[k*rr.complete : (k+1)*rr.complete]
		aFirst, bFirst := vs[:rr.nA[k]], vs[rr.complete-rr.nB[k]:]
		o.AFirst, o.BFirst = len(aFirst), len(bFirst)
		if len(aFirst) < 2 || len(bFirst) < 2 {
			continue
		}
		// Metrics are tested side by side; the test and the estimate
		// share one sort of the samples (in buf).
		wg.Go(func() {
			for _, xs := range [][]float64{aFirst, bFirst} {
				for i, r := range xs {
					xs[i] = math.Log(r)
				}
			}
			mw, _, hl := analysis.MannWhitneyShift(aFirst, bFirst)
			o.P = mw.P
			if hl.Defined() {
				o.SecondPct = analysis.Float(math.Expm1(float64(hl)/2) * 100)
			}
		})
	}
	wg.Wait()
	ps := make([]analysis.Float, len(out))
	for i := range out {
		ps[i] = out[i].P
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
