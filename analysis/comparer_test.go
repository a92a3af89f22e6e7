package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestComparerIsCompare compares metrics round by round, as a suite's
// stop rule does (a round adds a pair to one metric), with a Comparer and
// with Compare: the reports are the same JSON at every call, also when a
// value changes in place, a NaN comes in, a metric leaves and comes back,
// and the pairs come from a pool; and a report does not change when the
// Comparer is called again.
func TestComparerIsCompare(t *testing.T) {
	seq := DefaultOptions()
	seq.Correction, seq.Sequential, seq.SequentialMaxRounds = CorrectionBH, true, 12
	seq.SkipUnpairedEstimates, seq.Resamples, seq.ThresholdPct = true, 200, 3
	holm := DefaultOptions()
	holm.Resamples, holm.FirstIsPrimary = 200, true
	for name, opt := range map[string]Options{"sequential BH": seq, "holm, first primary": holm} {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const k = 9
			ins := make([]MetricInput, k)
			for i := range ins {
				ins[i] = MetricInput{Name: fmt.Sprintf("m%d", i), Unit: "ns/op", Samples: [][]float64{nil, nil}}
				if i%3 == 2 {
					ins[i].Unit, ins[i].Better = "MB/s", BetterHigher
				}
			}
			add := func(i int) {
				in := &ins[i]
				a := 100 * (1 + 0.03*rng.NormFloat64())
				b := a * (1 + 0.02*float64(i%4) + 0.01*rng.NormFloat64())
				if i == 4 {
					a, b = 7, 7 // the same constant: untested
				}
				in.Samples[0], in.Samples[1] = append(in.Samples[0], a), append(in.Samples[1], b)
				in.Pairs = append(in.Pairs, Pair{A: a, B: b})
				if i == 5 { // a pool of two devices
					in.Strata = []string{"d0", "d1"}
					in.PairStrata = append(in.PairStrata, len(in.Pairs)%2)
				}
			}
			c := NewComparer(opt)
			type kept struct {
				r    Report
				json string
			}
			var reports []kept
			check := func(step string, in []MetricInput) {
				t.Helper()
				got, want := c.Compare(in), Compare(in, opt)
				g, w := jsonOf(t, got), jsonOf(t, want)
				if g != w {
					t.Fatalf("%s: Comparer's report\n%s\nCompare's\n%s", step, g, w)
				}
				reports = append(reports, kept{got, g})
			}
			for round := range 3 * k {
				add(rng.IntN(k))
				check(fmt.Sprintf("round %d", round), ins)
			}
			for i := range k { // every metric a few rounds
				add(i)
				add(i)
			}
			check("all", ins)
			ins[1].Pairs[0].B *= 1.5 // in place: the same lengths
			ins[1].Samples[1][0] = ins[1].Pairs[0].B
			check("changed in place", ins)
			ins[2].Samples[0][1], ins[2].Pairs[1].A = math.NaN(), math.NaN()
			check("NaN", ins)
			check("again", ins)
			check("one left out", append(append([]MetricInput{}, ins[:3]...), ins[4:]...))
			check("back", ins)
			for i, r := range reports {
				if g := jsonOf(t, r.r); g != r.json {
					t.Fatalf("report %d changed after later calls:\n%s\nwas\n%s", i, g, r.json)
				}
			}
		})
	}
}

// TestSameInputSeesEveryField: an input that differs from another in any
// one field of MetricInput is not the same (a field added to MetricInput
// must be added to sameInput and cloneInput).
func TestSameInputSeesEveryField(t *testing.T) {
	var zero MetricInput
	typ := reflect.TypeOf(zero)
	for i := range typ.NumField() {
		var in MetricInput
		f := reflect.ValueOf(&in).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int:
			f.SetInt(1)
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("field %s of kind %s: teach this test and sameInput about it", typ.Field(i).Name, f.Kind())
		}
		if sameInput(zero, in) || sameInput(in, zero) {
			t.Errorf("an input with %s set is the same as the zero input", typ.Field(i).Name)
		}
		if !sameInput(in, cloneInput(in)) {
			t.Errorf("an input with %s set is not the same as its clone", typ.Field(i).Name)
		}
	}
}
