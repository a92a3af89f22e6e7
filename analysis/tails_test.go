package analysis

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// tailsRef is testdata/tails_reference.json, written by
// testdata/gen_tails_reference.py with scipy.stats (issue 16, items 7 and 8).
type tailsRef struct {
	NormSF []struct{ Z, SF float64 }     `json:"norm_sf"`
	TSF    []struct{ T, DF, SF float64 } `json:"t_sf"`
	Chi2SF []struct{ X, K, SF float64 }  `json:"chi2_sf"`
	Tests  []struct {
		Name           string
		A, B           []float64
		MWUPAsymptotic float64  `json:"mwu_p_asymptotic"`
		WelchP         float64  `json:"welch_p"`
		KruskalP       float64  `json:"kruskal_p"`
		SpearmanAP     float64  `json:"spearman_a_p"`
		WilcoxonP      *float64 `json:"wilcoxon_p"`
	}
	MWUExact []struct {
		Name  string
		A, B  []float64
		U, P  float64
		Exact bool
	} `json:"mwu_exact"`
}

func loadTails(t *testing.T) tailsRef {
	t.Helper()
	data, err := os.ReadFile("testdata/tails_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref tailsRef
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.NormSF) == 0 || len(ref.Tests) == 0 || len(ref.MWUExact) == 0 {
		t.Fatal("incomplete tails reference")
	}
	return ref
}

// tailTol is the relative tolerance of far-tail p-values against SciPy
// (issue 16 item 7); values SciPy underflows to 0 must be below 1e-300.
const tailTol = 1e-9

func checkTail(t *testing.T, name string, got, want float64) {
	t.Helper()
	if want == 0 {
		if !(got >= 0 && got < 1e-300) {
			t.Errorf("%s = %g, want 0 (scipy underflows)", name, got)
		}
		return
	}
	if r := math.Abs(got-want) / want; !(r <= tailTol) {
		t.Errorf("%s = %.17g, want %.17g (rel %.2g)", name, got, want, r)
	}
}

// TestTailsScipy checks normal, t and chi-square tails far out, where
// 1 − CDF rounds to 0, against scipy.stats' survival functions.
func TestTailsScipy(t *testing.T) {
	ref := loadTails(t)
	for _, c := range ref.NormSF {
		checkTail(t, "normalSF("+ftoa(c.Z)+")", normalSF(c.Z), c.SF)
	}
	for _, c := range ref.TSF {
		checkTail(t, "studentTSF("+ftoa(c.T)+", "+ftoa(c.DF)+")", studentTSF(c.T, c.DF), c.SF)
	}
	for _, c := range ref.Chi2SF {
		checkTail(t, "chiSquaredSF("+ftoa(c.X)+", "+ftoa(c.K)+")", chiSquaredSF(c.X, c.K), c.SF)
	}
}

// TestTestsFarTailScipy checks the p-values of every test on data sets
// whose statistics lie far in the tail (z up to ≈ 27): before issue 16
// the Mann–Whitney and signed-rank p became 0 beyond z ≈ 8.3.
func TestTestsFarTailScipy(t *testing.T) {
	ref := loadTails(t)
	for _, c := range ref.Tests {
		t.Run(c.Name, func(t *testing.T) {
			mw, _ := MannWhitneyU(c.A, c.B)
			checkTail(t, "mann-whitney p_asymptotic", float64(mw.PAsymptotic), c.MWUPAsymptotic)
			w, _ := WelchTest(c.A, c.B, 0.95)
			checkTail(t, "welch p", float64(w.P), c.WelchP)
			k, _ := KruskalWallisH(c.A, c.B)
			checkTail(t, "kruskal p", float64(k.P), c.KruskalP)
			s, _ := SpearmanTrend(c.A)
			checkTail(t, "spearman p", float64(s.P), c.SpearmanAP)
			if c.WilcoxonP != nil {
				pairs := make([]Pair, len(c.A))
				for i := range c.A {
					pairs[i] = Pair{A: c.A[i], B: c.B[i]}
				}
				d, ok := LogRatios(pairs)
				if !ok {
					t.Fatal("log ratios undefined")
				}
				_, p, _, _, _ := WilcoxonSignedRank(d)
				checkTail(t, "wilcoxon p", float64(p), *c.WilcoxonP)
			}
		})
	}
}

func ftoa(x float64) string { b, _ := json.Marshal(x); return string(b) }

// TestMannWhitneyAutoScipy checks which Mann–Whitney p-values are exact and
// their values against scipy.stats.mannwhitneyu(method="auto"): exact when
// either sample has at most 8 values and there are no ties (8 against 9,
// 3 against 20, 5 against 200 ...), asymptotic for 9 against 9 or with
// ties (issue 16 item 8: perflab required both samples to be small).
func TestMannWhitneyAutoScipy(t *testing.T) {
	ref := loadTails(t)
	for _, c := range ref.MWUExact {
		t.Run(c.Name, func(t *testing.T) {
			mw, _ := MannWhitneyU(c.A, c.B)
			if mw.Exact != c.Exact {
				t.Errorf("exact = %v, want %v", mw.Exact, c.Exact)
			}
			if float64(mw.U) != c.U {
				t.Errorf("U = %v, want %v", float64(mw.U), c.U)
			}
			checkTail(t, "p", float64(mw.P), c.P)
		})
	}
}

// TestMannWhitneyExactTail checks the exact p-value of complete separation
// far in the tail, 2/C(m+n, m), and that mwuMinP agrees.
func TestMannWhitneyExactTail(t *testing.T) {
	for _, c := range []struct{ m, n int }{{1, 1}, {3, 3}, {8, 9}, {8, 500}, {5, 2000}, {2, 100000}} {
		a := make([]float64, c.m)
		b := make([]float64, c.n)
		for i := range a {
			a[i] = float64(i)
		}
		for i := range b {
			b[i] = float64(c.m + i)
		}
		want := math.Min(1, 2/binomial(c.m+c.n, c.m))
		mw, _ := MannWhitneyU(a, b)
		if !mw.Exact {
			t.Errorf("%d vs %d: not exact", c.m, c.n)
		}
		checkTail(t, "exact p", float64(mw.P), want)
		checkTail(t, "mwuMinP", mwuMinP(c.m, c.n), want)
	}
}
