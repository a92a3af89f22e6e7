package analysis

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// signedRankTiesRef is testdata/signedrank_ties.json, written by
// testdata/gen_signedrank_ties.py with scipy.stats.wilcoxon on the log
// ratios rounded as signedRank's tolerance documents (issue 25 item 4).
type signedRankTiesRef struct {
	Cases []struct {
		Name         string
		A, B         []float64
		N, Zeros     int
		TieTerm      int `json:"tie_term"`
		RawTieTerm   int `json:"raw_tie_term"`
		Exact        bool
		Statistic, P float64
	}
}

// TestSignedRankTiesScipy checks the signed-rank statistic, p, zeros and
// method of paired data whose log ratios tie only up to float noise
// (mirrored pairs, equal ratios at other magnitudes, decimal values, B one
// ulp from A) against scipy.stats.wilcoxon on the rounded data, to 1e-12
// relative.
func TestSignedRankTiesScipy(t *testing.T) {
	data, err := os.ReadFile("testdata/signedrank_ties.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref signedRankTiesRef
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) != 40 {
		t.Fatalf("%d cases, want 40", len(ref.Cases))
	}
	matched := 0
	for _, c := range ref.Cases {
		pairs := make([]Pair, len(c.A))
		for i := range pairs {
			pairs[i] = Pair{A: c.A[i], B: c.B[i]}
		}
		d, ok := LogRatios(pairs)
		if !ok || len(d) != c.N {
			t.Fatalf("%s: log ratios %v", c.Name, ok)
		}
		st, p, exact, zeros, _ := WilcoxonSignedRank(d)
		good := zeros == c.Zeros && exact == c.Exact &&
			closeTo(float64(st), c.Statistic, 1e-12, 0) && closeTo(float64(p), c.P, 1e-12, 0)
		if !good {
			t.Errorf("%s: T %v p %.17g exact %v zeros %d; scipy T %v p %.17g exact %v zeros %d",
				c.Name, float64(st), float64(p), exact, zeros, c.Statistic, c.P, c.Exact, c.Zeros)
			continue
		}
		// The paired analysis ranks the same way.
		pr, _ := AnalyzePaired(pairs, 0, 0.05, 0.95, 0, 1)
		if float64(pr.Statistic) != float64(st) || float64(pr.P) != float64(p) || pr.Zeros != zeros {
			t.Errorf("%s: AnalyzePaired T %v p %v zeros %d, WilcoxonSignedRank T %v p %v zeros %d",
				c.Name, float64(pr.Statistic), float64(pr.P), pr.Zeros, float64(st), float64(p), zeros)
			continue
		}
		matched++
	}
	t.Logf("%d of %d tied cases match scipy.stats.wilcoxon", matched, len(ref.Cases))
}

// TestSignedRankTieTolerance checks the documented tolerance at its edges:
// log ratios that agree within it tie and ones just outside do not, and
// |d| at most the absolute tolerance is a zero.
func TestSignedRankTieTolerance(t *testing.T) {
	x := 0.03
	for _, c := range []struct {
		name  string
		d     []float64
		zeros int
		tie   bool // the two non-zero |d| tie
	}{
		{"mirrored", []float64{math.Log(103.0 / 100), math.Log(100.0 / 103)}, 0, true},
		{"within relative", []float64{x, -x * (1 + 0.9*signedRankRelTol)}, 0, true},
		{"outside relative", []float64{x, -x * (1 + 2*signedRankRelTol)}, 0, false},
		{"within absolute", []float64{1e-10, -1e-10 - 0.9*signedRankAbsTol}, 0, true},
		{"outside absolute", []float64{1e-10, -1e-10 - 2*signedRankAbsTol}, 0, false},
		{"zero", []float64{signedRankAbsTol, -signedRankAbsTol, 0, x, -2 * x}, 3, false},
		{"not zero", []float64{2 * signedRankAbsTol, -x}, 0, false},
	} {
		_, _, _, zeros, _ := WilcoxonSignedRank(c.d)
		r := signedRank(sortedCopy(c.d))
		n := float64(len(r.nonzero))
		untied := n * (n + 1) * (2*n + 1) / 24
		tied := r.se*r.se < untied-1e-9
		if zeros != c.zeros || tied != c.tie {
			t.Errorf("%s: zeros %d tied %v, want %d %v (d %v)", c.name, zeros, tied, c.zeros, c.tie, c.d)
		}
	}
}
