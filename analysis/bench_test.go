package analysis

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSamples returns two log-normal samples of n values, B 2% slower.
func benchSamples(n int, seed uint64) (a, b []float64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	a, b = make([]float64, n), make([]float64, n)
	for i := range a {
		a[i] = 100 * (1 + 0.05*rng.NormFloat64())
		b[i] = 102 * (1 + 0.05*rng.NormFloat64())
	}
	return a, b
}

// BenchmarkBootstrapMedianDiff: bootstrap CI of the median difference,
// 10,000 resamples, n = 1,000 per arm (the target: ≥5× faster than
// scipy.stats.bootstrap, compared by bench/bootstrap_vs_scipy.py).
func BenchmarkBootstrapMedianDiff(b *testing.B) {
	x, y := benchSamples(1000, 1)
	for b.Loop() {
		BootstrapMedianDiff(x, y, 0.95, 10000, 1)
	}
}

// BenchmarkBootstrapMedianDiffResampling is the same interval by classic
// resampling with quickselect medians.
func BenchmarkBootstrapMedianDiffResampling(b *testing.B) {
	x, y := benchSamples(1000, 1)
	for b.Loop() {
		BootstrapMedianDiffResampling(x, y, 0.95, 10000, 1)
	}
}

func BenchmarkHodgesLehmann(b *testing.B) {
	x, y := benchSamples(1000, 2)
	for b.Loop() {
		HodgesLehmann(x, y)
	}
}

// BenchmarkCompare10Metrics: the full analysis of 10 metrics at n = 1,000
// per arm with 10,000 bootstrap resamples each (target: under 100 ms, so
// live panels can refresh after every trial).
func BenchmarkCompare10Metrics(b *testing.B) {
	var in []MetricInput
	for i := range 10 {
		x, y := benchSamples(1000, uint64(i))
		in = append(in, MetricInput{Name: fmt.Sprintf("metric%d", i), Unit: "ms", Samples: [][]float64{x, y}})
	}
	opt := DefaultOptions()
	for b.Loop() {
		Compare(in, opt)
	}
}

// BenchmarkCompareLarge: the analysis behind `perflab report` on a
// 100,000-trial session: 3 metrics at n = 50,000 per arm (the target of
// bench/report_vs_benchstat.sh is to be no slower than benchstat).
func BenchmarkCompareLarge(b *testing.B) {
	var in []MetricInput
	for i := range 3 {
		x, y := benchSamples(50_000, uint64(i))
		in = append(in, MetricInput{Name: fmt.Sprintf("metric%d", i), Unit: "ms", Samples: [][]float64{x, y}})
	}
	opt := DefaultOptions()
	for b.Loop() {
		Compare(in, opt)
	}
}

// BenchmarkHodgesLehmannLarge: n = 50,000 per arm.
func BenchmarkHodgesLehmannLarge(b *testing.B) {
	x, y := benchSamples(50_000, 2)
	for b.Loop() {
		HodgesLehmann(x, y)
	}
}

// BenchmarkMannWhitneyLarge: n = 50,000 per arm.
func BenchmarkMannWhitneyLarge(b *testing.B) {
	x, y := benchSamples(50_000, 2)
	for b.Loop() {
		MannWhitneyU(x, y)
	}
}

// BenchmarkSortedWithRanks: one arm of 50,000 values sorted and ranked.
func BenchmarkSortedWithRanks(b *testing.B) {
	x, _ := benchSamples(50_000, 4)
	for b.Loop() {
		sortedWithRanks(x)
	}
}

// benchPairs returns n rounds of log-normal values, B 1% slower, with a
// per-round offset shared by both arms (what pairing removes).
func benchPairs(n int, seed uint64) []Pair {
	rng := rand.New(rand.NewPCG(seed, 77))
	p := make([]Pair, n)
	for i := range p {
		round := 1 + 0.05*rng.NormFloat64()
		p[i] = Pair{A: 100 * round * (1 + 0.01*rng.NormFloat64()), B: 101 * round * (1 + 0.01*rng.NormFloat64())}
	}
	return p
}

// BenchmarkAnalyzePairedLarge: the paired analysis of 50,000 rounds (one
// metric of bench/report_vs_benchstat.sh's session) with 10,000 resamples.
func BenchmarkAnalyzePairedLarge(b *testing.B) {
	p := benchPairs(50_000, 1)
	for b.Loop() {
		AnalyzePaired(p, 0, 0.05, 0.95, DefaultResamples, 1)
	}
}

// BenchmarkAnalyzePaired3000: 3,000 rounds, the largest n whose paired
// Hodges–Lehmann estimate is computed (maxWalshN).
func BenchmarkAnalyzePaired3000(b *testing.B) {
	p := benchPairs(maxWalshN, 2)
	for b.Loop() {
		AnalyzePaired(p, 0, 0.05, 0.95, DefaultResamples, 1)
	}
}

// benchPairedInputs returns metrics paired metrics of n rounds each
// (benchPairs, seeds 0, 1, ...), with their samples.
func benchPairedInputs(metrics, n int) []MetricInput {
	var in []MetricInput
	for i := range metrics {
		p := benchPairs(n, uint64(i))
		x, y := make([]float64, len(p)), make([]float64, len(p))
		for j, q := range p {
			x[j], y[j] = q.A, q.B
		}
		in = append(in, MetricInput{Name: fmt.Sprintf("metric%d", i), Unit: "ms", Samples: [][]float64{x, y}, Pairs: p})
	}
	return in
}

// BenchmarkCompareLargePaired: Compare of 3 metrics at 50,000 rounds of
// random order, as `perflab report` on bench/report_vs_benchstat.sh's
// session (paired primary analysis).
func BenchmarkCompareLargePaired(b *testing.B) {
	in := benchPairedInputs(3, 50_000)
	opt := DefaultOptions()
	for b.Loop() {
		Compare(in, opt)
	}
}

// BenchmarkCompareAutoStop: Compare as the live dashboard of a stop-auto
// run calls it after every trial (one metric, 20 rounds, group-sequential
// design over max_trials rounds), with the design built afresh on every
// call (fresh, as before Options.Designs) and kept across calls (kept).
// With several metrics, fresh now builds one design per call, not one per
// metric.
func BenchmarkCompareAutoStop(b *testing.B) {
	in := benchPairedInputs(1, 20)
	for _, maxK := range []int{40, 200, 1000} {
		opt := DefaultOptions()
		opt.Sequential, opt.SequentialMaxRounds = true, maxK
		b.Run(fmt.Sprintf("max_trials=%d/fresh", maxK), func(b *testing.B) {
			for b.Loop() {
				Compare(in, opt)
			}
		})
		kept := opt
		kept.Designs = new(SequentialDesigns)
		b.Run(fmt.Sprintf("max_trials=%d/kept", maxK), func(b *testing.B) {
			for b.Loop() {
				Compare(in, kept)
			}
		})
	}
}

// BenchmarkComparePaired500: the final report of `perflab run --headless`
// on 1,000 trials of a quick command: 3 metrics (wall time, user time with
// a few 0 ms, system time mostly 0 ms) of 500 pairs, in full and with
// SkipUnpairedEstimates (what the table-only run uses).
func BenchmarkComparePaired500(b *testing.B) {
	in := skipInputs(1)[:3]
	for _, skip := range []bool{false, true} {
		name := "full"
		if skip {
			name = "skip-unpaired"
		}
		b.Run(name, func(b *testing.B) {
			opt := DefaultOptions()
			opt.SkipUnpairedEstimates = skip
			for b.Loop() {
				Compare(in, opt)
			}
		})
	}
}
