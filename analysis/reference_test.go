package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// The reference values in testdata/reference.json are computed
// independently with scipy.stats by testdata/gen_reference.py (see its doc
// comment for how to regenerate them).

type refSummary struct {
	N                              int
	Mean, Median, SD, CV, Min, Max *float64
}

type refCase struct {
	Name           string
	Note           string
	Samples        [][]float64
	A, B           refSummary
	DeltaPctMean   *float64 `json:"delta_pct_mean"`
	DeltaPctMedian *float64 `json:"delta_pct_median"`
	HodgesLehmann  *float64 `json:"hodges_lehmann"`
	Welch          struct {
		T, DF, P *float64
		CILow    *float64 `json:"ci_low"`
		CIHigh   *float64 `json:"ci_high"`
	}
	MannWhitney struct {
		U, P        *float64
		PAsymptotic *float64 `json:"p_asymptotic"`
		Exact       bool
	} `json:"mann_whitney"`
	KruskalWallis    struct{ H, P *float64 } `json:"kruskal_wallis"`
	KruskalWallisAll struct{ H, P *float64 } `json:"kruskal_wallis_all"`
	Bootstrap        struct {
		Point, Low, High, SE *float64
		Resamples            int
		PctLow               *float64 `json:"pct_low"`
		PctHigh              *float64 `json:"pct_high"`
	}
	Trend struct {
		A, B struct{ Rho, P *float64 }
	}
	MDEPct *float64 `json:"mde_pct"`
}

type refFile struct {
	Confidence, Alpha float64
	Resamples         int
	Cases             []refCase
	Corrections       []struct {
		P, Holm, Bonferroni []*float64
	}
	TPPF []struct {
		P, DF, Q float64
		ScipyPPF float64 `json:"scipy_ppf"`
	} `json:"t_ppf"`
}

func loadReference(t *testing.T) refFile {
	t.Helper()
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref refFile
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	return ref
}

// closeTo reports whether got is within rel relative or abs absolute
// tolerance of want.
func closeTo(got, want, rel, abs float64) bool {
	return math.Abs(got-want) <= math.Max(abs, rel*math.Abs(want))
}

func TestReferenceScipy(t *testing.T) {
	ref := loadReference(t)
	for _, c := range ref.Cases {
		t.Run(c.Name, func(t *testing.T) {
			opt := DefaultOptions()
			opt.Resamples = ref.Resamples
			opt.Confidence = ref.Confidence
			opt.Alpha = ref.Alpha
			r := Compare([]MetricInput{{Name: c.Name, Samples: c.Samples}}, opt)
			m := r.Metrics[0]
			scale := scaleOf(c.Samples...)
			// check compares one statistic; tolerances are relative, with an
			// absolute floor in units of the data's magnitude (or 1 for
			// scale-free statistics).
			check := func(field string, got Float, want *float64, rel, abs float64) {
				t.Helper()
				if want == nil {
					if got.Defined() {
						t.Errorf("%s = %v, want undefined (scipy: NaN)", field, float64(got))
					}
					return
				}
				if !got.Defined() {
					t.Errorf("%s undefined, want %v", field, *want)
					return
				}
				if !closeTo(float64(got), *want, rel, abs) {
					t.Errorf("%s = %.17g, want %.17g (rel %.2g)", field, float64(got), *want,
						math.Abs(float64(got)-*want)/math.Abs(*want))
				}
			}
			const exact, special = 1e-9, 1e-6
			for _, arm := range []struct {
				name string
				got  Summary
				want refSummary
			}{{"a", m.A, c.A}, {"b", m.B, c.B}} {
				if arm.got.N != arm.want.N {
					t.Errorf("%s.n = %d, want %d", arm.name, arm.got.N, arm.want.N)
				}
				check(arm.name+".mean", arm.got.Mean, arm.want.Mean, exact, 1e-12*scale)
				check(arm.name+".median", arm.got.Median, arm.want.Median, exact, 1e-12*scale)
				check(arm.name+".sd", arm.got.SD, arm.want.SD, exact, 1e-12*scale)
				check(arm.name+".cv", arm.got.CV, arm.want.CV, exact, 1e-12)
				check(arm.name+".min", arm.got.Min, arm.want.Min, exact, 0)
				check(arm.name+".max", arm.got.Max, arm.want.Max, exact, 0)
			}
			check("delta_pct_mean", m.DeltaPctMean, c.DeltaPctMean, exact, 1e-9)
			check("delta_pct_median", m.DeltaPctMedian, c.DeltaPctMedian, exact, 1e-9)
			check("hodges_lehmann", m.HodgesLehmann, c.HodgesLehmann, exact, 1e-12*scale)
			check("welch.t", m.Welch.T, c.Welch.T, special, 1e-9)
			check("welch.df", m.Welch.DF, c.Welch.DF, special, 1e-9)
			check("welch.p", m.Welch.P, c.Welch.P, special, 1e-12)
			// Welch's interval to 1e-12 relative (issue 11), with a floor in
			// units of its half-width for ends near 0.
			half := math.Inf(1)
			if c.Welch.CILow != nil {
				half = (*c.Welch.CIHigh - *c.Welch.CILow) / 2
			}
			check("welch.ci_low", m.Welch.CILow, c.Welch.CILow, 1e-12, 1e-13*half)
			check("welch.ci_high", m.Welch.CIHigh, c.Welch.CIHigh, 1e-12, 1e-13*half)
			check("mann_whitney.u", m.MannWhitney.U, c.MannWhitney.U, exact, 0)
			check("mann_whitney.p", m.MannWhitney.P, c.MannWhitney.P, special, 1e-12)
			check("mann_whitney.p_asymptotic", m.MannWhitney.PAsymptotic, c.MannWhitney.PAsymptotic, special, 1e-12)
			if m.MannWhitney.Exact != c.MannWhitney.Exact {
				t.Errorf("mann_whitney.exact = %v, want %v", m.MannWhitney.Exact, c.MannWhitney.Exact)
			}
			check("kruskal_wallis.h", m.KruskalWallis.H, c.KruskalWallis.H, special, 1e-9)
			check("kruskal_wallis.p", m.KruskalWallis.P, c.KruskalWallis.P, special, 1e-12)
			// kruskal_wallis_all only with three or more inputs (with two,
			// kruskal_wallis is that test).
			if kw := m.KruskalWallisAll; (kw != nil) != (len(c.Samples) > 2) {
				t.Errorf("kruskal_wallis_all %v with %d inputs", kw, len(c.Samples))
			} else if kw != nil {
				check("kruskal_wallis_all.h", kw.H, c.KruskalWallisAll.H, special, 1e-9)
				check("kruskal_wallis_all.p", kw.P, c.KruskalWallisAll.P, special, 1e-12)
			}
			check("trend.a.rho", m.Trend.A.Rho, c.Trend.A.Rho, exact, 1e-12)
			check("trend.a.p", m.Trend.A.P, c.Trend.A.P, special, 1e-12)
			check("trend.b.rho", m.Trend.B.Rho, c.Trend.B.Rho, exact, 1e-12)
			check("trend.b.p", m.Trend.B.P, c.Trend.B.P, special, 1e-12)
			check("mde_pct", m.MDEPct, c.MDEPct, 1e-12, 1e-12)

			// The bootstrap is Monte Carlo on both sides (different random
			// streams): interval ends must agree within a fraction of the
			// bootstrap standard error, the SE itself within a few percent.
			bs := c.Bootstrap
			check("bootstrap.point", m.Bootstrap.Point, bs.Point, exact, 1e-12*scale)
			if bs.SE == nil {
				check("bootstrap.low", m.Bootstrap.Low, nil, 0, 0)
				check("bootstrap.se", m.Bootstrap.SE, nil, 0, 0)
				return
			}
			tol := 0.1**bs.SE + 1e-12*scale
			check("bootstrap.low", m.Bootstrap.Low, bs.Low, 0, tol)
			check("bootstrap.high", m.Bootstrap.High, bs.High, 0, tol)
			check("bootstrap.se", m.Bootstrap.SE, bs.SE, 0.03, 1e-12*scale)
			if bs.PctLow != nil {
				ptol := tol / math.Abs(*c.A.Median) * 100
				check("bootstrap.pct_low", m.Bootstrap.PctLow, bs.PctLow, 0, ptol)
				check("bootstrap.pct_high", m.Bootstrap.PctHigh, bs.PctHigh, 0, ptol)
			}
		})
	}
}

func TestReferenceCorrections(t *testing.T) {
	ref := loadReference(t)
	for i, c := range ref.Corrections {
		ps := make([]Float, len(c.P))
		for j, p := range c.P {
			ps[j] = undefined()
			if p != nil {
				ps[j] = Float(*p)
			}
		}
		for _, method := range []struct {
			name string
			want []*float64
		}{{CorrectionHolm, c.Holm}, {CorrectionBonferroni, c.Bonferroni}} {
			got := Adjust(ps, method.name)
			for j := range got {
				name := fmt.Sprintf("set %d %s[%d]", i, method.name, j)
				w := method.want[j]
				switch {
				case w == nil && got[j].Defined():
					t.Errorf("%s = %v, want undefined", name, float64(got[j]))
				case w != nil && !closeTo(float64(got[j]), *w, 1e-12, 0):
					t.Errorf("%s = %v, want %v", name, float64(got[j]), *w)
				}
			}
		}
	}
}

// TestReferenceTQuantile checks Student's t quantiles to 1e-12 relative
// against scipy.stats.t.ppf refined by Newton steps on scipy.stats.t.sf
// (scipy's own ppf is off by up to ~7e-9; see gen_reference.py).
func TestReferenceTQuantile(t *testing.T) {
	ref := loadReference(t)
	if len(ref.TPPF) == 0 {
		t.Fatal("no t_ppf reference values")
	}
	worstScipy := 0.0
	for _, c := range ref.TPPF {
		got := studentTQuantile(c.P, c.DF)
		if !closeTo(got, c.Q, 1e-12, 0) {
			t.Errorf("t quantile p=%v df=%v = %.17g, want %.17g (rel %.2g)", c.P, c.DF, got, c.Q, math.Abs(got-c.Q)/math.Abs(c.Q))
		}
		worstScipy = math.Max(worstScipy, math.Abs(c.ScipyPPF-c.Q)/math.Abs(c.Q))
	}
	t.Logf("scipy.stats.t.ppf itself differs from the refined quantile by up to %.2g relative", worstScipy)
}
