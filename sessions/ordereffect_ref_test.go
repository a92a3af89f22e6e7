package sessions

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// TestOrderEffectsReference checks OrderEffects against
// orderEffectsReference, the plain version it replaced (a map of rounds,
// one linear search per value), bit for bit on random sessions with the
// irregular shapes a session may hold: rounds of one or three trials,
// metrics missing, reordered, repeated or non-positive, trials not
// counted, a third build, sparse and negative round numbers.
func TestOrderEffectsReference(t *testing.T) {
	names := []string{"wall_ms", "user_ms", "sys_ms", "rss"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var evs []lab.Event
		idx := 0
		rounds := 1 + rng.IntN(80)
		sparse := seed%5 == 0
		for r := range rounds {
			round := r
			if sparse {
				round = r*r*1000 - 7
			}
			arms := []string{lab.ArmControl, lab.ArmTreatment}
			if rng.IntN(2) == 0 {
				arms[0], arms[1] = arms[1], arms[0]
			}
			switch rng.IntN(12) {
			case 0:
				arms = arms[:1]
			case 1:
				arms = append(arms, "c")
			case 2:
				arms = append(arms, arms[0])
			}
			for _, arm := range arms {
				tr := &lab.Trial{Index: idx, Round: round, Arm: arm, Order: lab.OrderRandom, Status: lab.StatusOK}
				if seed%3 == 0 && rng.IntN(4) == 0 {
					tr.Index = idx - 3 // out of order
				}
				switch rng.IntN(20) {
				case 0:
					tr.Status = lab.StatusFailed
				case 1:
					tr.Warmup = true
				}
				ms := names[:1+rng.IntN(len(names))]
				if seed%4 == 0 {
					ms = []string{names[0], names[1], names[2]}
				}
				for _, n := range ms {
					v := 100 * (1 + 0.01*rng.NormFloat64())
					switch rng.IntN(40) {
					case 0:
						v = 0
					case 1:
						v = math.Inf(1)
					case 2:
						v = -v
					}
					tr.Metrics = append(tr.Metrics, lab.Metric{Name: n, Value: v})
				}
				switch rng.IntN(10) {
				case 0:
					rng.Shuffle(len(tr.Metrics), func(i, j int) { tr.Metrics[i], tr.Metrics[j] = tr.Metrics[j], tr.Metrics[i] })
				case 1:
					tr.Metrics = append(tr.Metrics, lab.Metric{Name: tr.Metrics[0].Name, Value: 1})
				case 2:
					tr.Metrics = append([]lab.Metric{{Name: tr.Metrics[len(tr.Metrics)-1].Name, Value: 3}}, tr.Metrics...)
				case 3:
					tr.Metrics = nil
				}
				evs = append(evs, lab.Event{Type: lab.EventTrial, Trial: tr})
				idx++
			}
			if rng.IntN(10) == 0 {
				evs = append(evs, lab.Event{Type: lab.EventNote, Note: &lab.Note{Text: "n"}})
			}
		}
		if seed%7 == 0 { // many metric names
			for k := range 40 {
				for i := range evs {
					if tr := evs[i].Trial; tr != nil && k%3 == int(seed)%3 {
						tr.Metrics = append(tr.Metrics, lab.Metric{Name: string(rune('A' + k)), Value: float64(1 + rng.IntN(9))})
					}
				}
			}
		}
		got, want := OrderEffects(evs), orderEffectsReference(evs)
		if !sameEffects(got, want) {
			t.Fatalf("seed %d: OrderEffects\\n%+v\\nwant (reference)\\n%+v", seed, got, want)
		}
	}
}

func sameEffects(a, b []OrderEffect) bool {
	if len(a) != len(b) {
		return false
	}
	bits := func(f analysis.Float) uint64 { return math.Float64bits(float64(f)) }
	for i := range a {
		x, y := a[i], b[i]
		if x.Metric != y.Metric || x.AFirst != y.AFirst || x.BFirst != y.BFirst ||
			bits(x.P) != bits(y.P) || bits(x.PAdjusted) != bits(y.PAdjusted) || bits(x.SecondPct) != bits(y.SecondPct) {
			return false
		}
	}
	return true
}

// orderEffectsReference is OrderEffects as first written: the reference
// of TestOrderEffectsReference.
func orderEffectsReference(events []lab.Event) []OrderEffect {
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
