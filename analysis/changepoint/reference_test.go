package changepoint

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
)

// TestSplitAndEffectReference checks bestSplit's running sums against
// Matteson & James's Q written out pair by pair, the effect floor
// against Cohen's d and its trimmed version against scipy.stats.trim_mean
// and mstats.winsorize, the pooled trimmed t and its normal z against
// scipy.stats.ttest_ind(trim=0.2) and norm.isf, the AR(1) variance factor
// against numpy's quadratic form, the generalised-least-squares step t
// and split under AR(1) against numpy's fit with the full correlation
// matrix, and the max-split p against the same
// formula through scipy.stats.norm, all in testdata/gen_reference.py.
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
		TrimmedEffects []struct {
			A, B                []float64
			D                   float64
			WinsorizedNormalVar float64 `json:"winsorized_normal_var"`
		} `json:"trimmed_effects"`
		Yuen []struct {
			A, B    []float64
			T, P, Z float64
		}
		AR []struct {
			M, K        int
			Rho, Factor float64
		}
		GLS []struct {
			Series      []float64
			Lo, Tau, Hi int
			Rho, T      float64
			MinSegment  int `json:"min_segment"`
			Split       int
		}
		Maxsel []struct {
			Z          float64
			N          int
			MinSegment int `json:"min_segment"`
			P          float64
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Splits) == 0 || len(ref.Effects) == 0 || len(ref.TrimmedEffects) == 0 || len(ref.Yuen) == 0 || len(ref.AR) == 0 || len(ref.Maxsel) == 0 || len(ref.GLS) == 0 {
		t.Fatal("missing cases in testdata/reference.json")
	}
	rel := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }
	for i, c := range ref.Yuen {
		xs := append(append([]float64{}, c.A...), c.B...)
		tt, df, ok := trimmedT(xs, 0, len(c.A), len(xs))
		if z := tToZ(tt, df); !ok || !rel(tt, c.T, 1e-9) || !rel(z, c.Z, 1e-6) {
			t.Errorf("trimmed t %d: t %v z %v; SciPy's %v, p %v (z %v)", i, tt, z, c.T, c.P, c.Z)
		}
	}
	for i, c := range ref.AR {
		if got := arInflation(c.M, c.K, c.Rho); !rel(got, c.Factor, 1e-9) {
			t.Errorf("AR factor %d (%d, %d, ρ %g): %v, numpy's quadratic form %v", i, c.M, c.K, c.Rho, got, c.Factor)
		}
	}
	for i, c := range ref.Maxsel {
		if got := maxSplitP(c.Z, c.N, c.MinSegment); !rel(got, c.P, 1e-9) {
			t.Errorf("max-split p %d (z %g, n %d, min %d): %v, SciPy %v", i, c.Z, c.N, c.MinSegment, got, c.P)
		}
	}
	for i, c := range ref.GLS {
		seg := c.Series[c.Lo:c.Hi]
		if !slices.Equal(cleanAR(seg, c.Tau-c.Lo, c.Rho), seg) {
			t.Errorf("GLS %d: the reference series has a value cleanAR replaces", i)
		}
		tt, df, ok := glsZ(c.Series, c.Lo, c.Tau, c.Hi, c.Rho)
		if !ok || !rel(tt, c.T, 1e-9) || df != float64(c.Hi-c.Lo-2) {
			t.Errorf("GLS %d (ρ %g): t %v on %v df (ok %v), numpy's generalised least squares %v", i, c.Rho, tt, df, ok, c.T)
		}
		if tau, ok := glsSplit(c.Series, c.Lo, c.Tau, c.Hi, c.MinSegment, c.Rho); !ok || tau != c.Split {
			t.Errorf("GLS split %d (ρ %g): %d (ok %v), numpy's %d", i, c.Rho, tau, ok, c.Split)
		}
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
	for i, c := range ref.TrimmedEffects {
		if got := trimmedEffect(c.A, c.B); math.Abs(got-c.D) > 1e-12*c.D {
			t.Errorf("trimmed effect %d: %v, SciPy's %v", i, got, c.D)
		}
		if math.Abs(winsorizedNormalVar-c.WinsorizedNormalVar) > 1e-15 {
			t.Errorf("winsorizedNormalVar %v, scipy.stats.norm's %v", winsorizedNormalVar, c.WinsorizedNormalVar)
		}
	}
}
