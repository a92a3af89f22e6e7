package changepoint

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestSplitAndEffectReference checks bestSplit's running sums against
// Matteson & James's Q written out pair by pair, and the effect floor
// against Cohen's d, both computed by numpy in
// testdata/gen_reference.py.
func TestSplitAndEffectReference(t *testing.T) {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Splits []struct {
			Series      []float64
			Lo, Hi, Tau int
			MinSegment  int `json:"min_segment"`
		}
		Effects []struct {
			A, B []float64
			D    float64
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Splits) == 0 || len(ref.Effects) == 0 {
		t.Fatal("no split or effect cases in testdata/reference.json")
	}
	for i, c := range ref.Splits {
		tau, ok := newDistances(c.Series).bestSplit(c.Lo, c.Hi, c.MinSegment)
		if !ok || tau != c.Tau {
			t.Errorf("split %d of [%d, %d), min %d: τ %d (ok %v), numpy's argmax of Q %d", i, c.Lo, c.Hi, c.MinSegment, tau, ok, c.Tau)
		}
	}
	for i, c := range ref.Effects {
		got := effect(c.A, c.B, mean(c.A), mean(c.B), math.Sqrt(variance(c.A)), math.Sqrt(variance(c.B)))
		if math.Abs(got-c.D) > 1e-12*c.D {
			t.Errorf("effect %d: %v, numpy's Cohen's d %v", i, got, c.D)
		}
	}
}
