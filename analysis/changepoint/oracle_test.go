package changepoint_test

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/internal/cpstudy"
)

var (
	oracleSeries = flag.Int("oracle", 0, "series per φ of the oracle study (bench/changepoint_oracle.sh); 0 runs the small seeded one")
	oracleSeed   = flag.Uint64("oracle-seed", 1, "seed of the oracle study")
	oracleAlpha  = flag.Float64("oracle-alpha", changepoint.DefaultAlpha, "the level of the oracle study's tests, the detector's included")
)

// oracleRecall is, for one φ, the recall of the steps of at least 2σ of
// the study's step family (within cpstudy.Tolerance, p below
// -oracle-alpha, the detector's default unless given) by four finders, each by size (index 2–6) and over all ([0]):
// the detector; the oracle that knows the true neighbouring steps and
// the true φ; the one that knows the steps and estimates ρ around them
// but takes the estimate as exact; and the one that estimates ρ and
// allows for its error as the detector does.
type oracleRecall struct {
	steps                                [7]int
	detector, known, estExact, estimated [7]int
}

func (o *oracleRecall) add(to *[7]int, size int, at, tau int, p float64, ok bool) {
	if ok && p < *oracleAlpha && at >= tau-cpstudy.Tolerance && at <= tau+cpstudy.Tolerance {
		to[size]++
		to[0]++
	}
}

func oracleStudy(t *testing.T, seed uint64, series int, phi float64) oracleRecall {
	r := rand.New(rand.NewPCG(seed, uint64(cpstudy.Steps)))
	var o oracleRecall
	minSeg := changepoint.DefaultMinSegment
	for range series {
		s := cpstudy.Generate(r, cpstudy.Steps, 200, phi)
		found, err := changepoint.Detect(s.Values, changepoint.Options{Alpha: *oracleAlpha})
		if err != nil {
			t.Fatal(err)
		}
		for k, tau := range s.Steps {
			size := int(math.Abs(s.Sizes[k]))
			if size < 2 {
				continue
			}
			o.steps[size]++
			o.steps[0]++
			for _, f := range found {
				if f.Index >= tau-cpstudy.Tolerance && f.Index <= tau+cpstudy.Tolerance {
					o.detector[size]++
					o.detector[0]++
					break
				}
			}
			lo, hi := 0, len(s.Values)
			if k > 0 {
				lo = s.Steps[k-1]
			}
			if k+1 < len(s.Steps) {
				hi = s.Steps[k+1]
			}
			at, p, ok := changepoint.Oracle(s.Values, lo, tau, hi, minSeg, phi)
			o.add(&o.known, size, at, tau, p, ok)
			at, p, ok = changepoint.OracleEstimated(s.Values, s.Steps, k, minSeg, true)
			o.add(&o.estExact, size, at, tau, p, ok)
			at, p, ok = changepoint.OracleEstimated(s.Values, s.Steps, k, minSeg, false)
			o.add(&o.estimated, size, at, tau, p, ok)
		}
	}
	return o
}

func (o oracleRecall) rate(of [7]int, size int) float64 {
	return float64(of[size]) / float64(o.steps[size])
}

func (o oracleRecall) String() string {
	var b strings.Builder
	for _, row := range []struct {
		name string
		of   [7]int
	}{{"detector", o.detector}, {"ρ estimated, its error allowed for", o.estimated},
		{"ρ estimated, taken as exact", o.estExact}, {"ρ known", o.known}} {
		fmt.Fprintf(&b, "  %-36s ≥2σ %.3f  by size:", row.name, o.rate(row.of, 0))
		for size := 2; size <= 6; size++ {
			fmt.Fprintf(&b, " %dσ %.2f", size, o.rate(row.of, size))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestOracle bounds the detector's recall by what its step test finds
// when the segments are known (the study behind docs/history.md's
// "What the data allow"): with -oracle N the full study, 1,000 series a
// φ for the docs; without, a small seeded one whose figures must order
// as a bound does: knowing φ finds at least as much as estimating it,
// and allowing for the estimate's error finds no more than taking it as
// exact (it raises every p).
func TestOracle(t *testing.T) {
	series := *oracleSeries
	if series == 0 {
		series = 60
	}
	for _, phi := range []float64{0, 0.3, 0.5, 0.7} {
		if *oracleSeries == 0 && phi != 0 && phi != 0.7 {
			continue
		}
		o := oracleStudy(t, *oracleSeed, series, phi)
		if *oracleSeries > 0 {
			fmt.Printf("φ %.1f, %d steps of at least 2σ in %d series (seed %d), found within ±%d at alpha %g:\n%s",
				phi, o.steps[0], series, *oracleSeed, cpstudy.Tolerance, *oracleAlpha, o)
			continue
		}
		t.Logf("φ %.1f:\n%s", phi, o)
		if o.estimated[0] > o.estExact[0] {
			t.Errorf("φ %.1f: allowing for ρ̂'s error found more steps (%d) than taking it as exact (%d)", phi, o.estimated[0], o.estExact[0])
		}
		if phi > 0 && o.known[0] < o.estimated[0] {
			t.Errorf("φ %.1f: knowing φ found fewer steps (%d) than estimating it (%d)", phi, o.known[0], o.estimated[0])
		}
		if phi == 0 && o.rate(o.known, 0) < 0.9 {
			t.Errorf("φ 0: the oracle found %.3f of the steps of at least 2σ, want ≥ 0.9 (1,000 series: 0.983)", o.rate(o.known, 0))
		}
	}
}
