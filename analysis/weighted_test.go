package analysis

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestAdjustWeightedReference checks the weighted Benjamini–Hochberg
// adjusted p-values (Genovese, Roeder & Wasserman 2006, each level capped
// at alpha) against testdata/weighted_bh.json, which
// testdata/gen_weighted_bh.py finds with numpy by running the step-up at
// every level where its rejections can change (a brute force, not the
// closed form AdjustWeighted uses). Where no cap binds the reference's
// uncapped weighted BH (BH on p/w) must agree too, and with equal weights
// both are R's p.adjust(p, "BH").
func TestAdjustWeightedReference(t *testing.T) {
	data, err := os.ReadFile("testdata/weighted_bh.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name     string    `json:"name"`
		P        []float64 `json:"p"`
		W        []float64 `json:"w"`
		Adjusted []float64 `json:"adjusted"`
		Uncapped []float64 `json:"uncapped"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 6 {
		t.Fatalf("%d cases", len(cases))
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
	for _, c := range cases {
		ps := make([]Float, len(c.P))
		for i, p := range c.P {
			ps[i] = Float(p)
		}
		got := AdjustWeighted(ps, c.W)
		for i := range c.P {
			if !close(float64(got[i]), c.Adjusted[i]) {
				t.Errorf("%s: p %v w %v: adjusted %v, want %v", c.Name, c.P[i], c.W[i], got[i], c.Adjusted[i])
			}
			if got[i] < ps[i] {
				t.Errorf("%s: adjusted %v below p %v", c.Name, got[i], ps[i])
			}
		}
		if c.Name == "bh, equal weights" {
			bh := Adjust(ps, CorrectionBH)
			for i := range bh {
				if !close(float64(bh[i]), c.Uncapped[i]) || !close(float64(got[i]), c.Uncapped[i]) {
					t.Errorf("equal weights: %v, BH %v, want %v", got[i], bh[i], c.Uncapped[i])
				}
			}
		}
	}
	// Scaling the weights changes nothing (they are rescaled to average
	// 1), nor does an undefined p-value (no test, no weight).
	c := cases[2]
	ps := []Float{}
	ws := []float64{}
	for i, p := range c.P {
		ps = append(ps, Float(p))
		ws = append(ws, 7*c.W[i])
	}
	ps = append(ps, undefined())
	ws = append(ws, 1000)
	got := AdjustWeighted(ps, ws)
	for i := range c.P {
		if !close(float64(got[i]), c.Adjusted[i]) {
			t.Errorf("scaled weights: %v, want %v", got[i], c.Adjusted[i])
		}
	}
	if got[len(got)-1].Defined() {
		t.Error("an undefined p got an adjusted one")
	}
	if err := (Options{Correction: CorrectionWeightedBH}).Validate(); err != nil {
		t.Errorf("weighted-bh refused: %v", err)
	}
}

// TestWeightedFamilyDecides: through Compare, a change in a heavy metric
// whose p would not pass flat BH over many null metrics passes the
// weighted correction, and its interval is at its own level
// 1 − (1 − confidence)·min(1, w·R/k), which excludes 0 as its verdict says.
func TestWeightedFamilyDecides(t *testing.T) {
	const k, n = 60, 20
	var ins []MetricInput
	for j := range k {
		in := MetricInput{Name: "f" + string(rune('A'+j/26)) + string(rune('a'+j%26)), Unit: "ms", Weight: 0.2}
		for r := range n {
			a := 100 + float64((r*7+j*3)%11)
			b := a * (1 + 0.01*float64((r*5+j)%7-3)) // null-ish, symmetric
			if j == 0 {
				b = a * (1.012 + 0.002*float64(r%3)) // every pair up: p at the signed-rank floor
				in.Weight = 30
			}
			in.Pairs = append(in.Pairs, Pair{A: a, B: b})
		}
		ins = append(ins, in)
	}
	for i := range ins {
		ins[i].Samples = [][]float64{nil, nil}
		for _, p := range ins[i].Pairs {
			ins[i].Samples[0] = append(ins[i].Samples[0], p.A)
			ins[i].Samples[1] = append(ins[i].Samples[1], p.B)
		}
	}
	opt := DefaultOptions()
	opt.Correction = CorrectionBH
	flat := Compare(ins, opt)
	opt.Correction = CorrectionWeightedBH
	wt := Compare(ins, opt)
	m := wt.Metrics[0]
	if m.Verdict != VerdictRegression || !(float64(m.PAdjusted) < 0.05) {
		t.Fatalf("weighted: %s p adj %v", m.Verdict, m.PAdjusted)
	}
	if !(float64(wt.Metrics[0].PAdjusted) < float64(flat.Metrics[0].PAdjusted)) {
		t.Errorf("weighted p adj %v not below flat %v", wt.Metrics[0].PAdjusted, flat.Metrics[0].PAdjusted)
	}
	// Weights 30 and 59×0.2, rescaled to average 1: w = 30·60/41.8.
	w := 30 * float64(k) / (30 + 0.2*float64(k-1))
	r := 0
	for _, x := range wt.Metrics {
		if float64(x.PAdjusted) < 0.05 {
			r++
		}
	}
	want := 1 - 0.05*math.Min(1, w*float64(r)/k)
	if math.Abs(m.Decision.Confidence-want) > 1e-12 || !(float64(m.Decision.CILowPct) > 0) {
		t.Errorf("interval at %v (want %v): [%v, %v]", m.Decision.Confidence, want, m.Decision.CILowPct, m.Decision.CIHighPct)
	}
}
