// Package cpstudy measures the change-point detector (analysis/changepoint)
// on synthetic series whose true steps are known: Gaussian AR(1) noise
// (lag-1 autocorrelation φ, 0 for independent builds) with occasional
// slow outliers, single spikes, steps of 1–6σ anywhere from MinDistance
// builds of an end, each series of steps with a one-build outlier a few
// builds from one of them, and slow drifts.
// The seeded test in analysis/changepoint runs a small study and
// bench/changepoint_study the full one whose figures docs/history.md gives.
package cpstudy

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/perflab/perflab/analysis/changepoint"
)

// Level and Sigma are the synthetic series' baseline and noise: a step of
// kσ is k% of the level.
const (
	Level = 100.0
	Sigma = 1.0
)

// Kind is a family of synthetic series.
type Kind int

// The families of the study.
const (
	Stationary Kind = iota // Gaussian noise only
	Outliers               // noise plus slow outliers (+4σ to +8σ) on 2% of points
	Spike                  // noise plus one spike of ±8σ to ±12σ
	Steps                  // 1–3 steps of 1–6σ, with outliers, a spike and an outlier near a step
	Drift                  // a slow linear drift of 1–3σ over the series, no step
)

func (k Kind) String() string {
	return [...]string{"stationary", "outliers", "spike", "steps", "drift"}[k]
}

// Series is one synthetic series and its truth.
type Series struct {
	Kind   Kind
	Values []float64
	// Steps are the true steps' first indices and Sizes their size in σ
	// (signed).
	Steps []int
	Sizes []float64
	// SpikeAt is the spike's index, −1 without one.
	SpikeAt int
	// NearAt is the index of the one-build outlier placed near a step,
	// −1 without one.
	NearAt int
}

// MinDistance is the fewest builds between a true step and an end of its
// series: the detector's default minimum segment, as no step can be told
// from a spike nearer to an end.
const MinDistance = changepoint.DefaultMinSegment

// Tolerance is how far, in builds, a reported step may lie from a true
// step and count as found.
const Tolerance = 2

// noise fills xs with stationary Gaussian AR(1) noise of lag-1
// autocorrelation phi and standard deviation Sigma:
// e_t = φ·e_{t−1} + √(1−φ²)·σ·w_t, e_0 ~ N(0, σ²).
func noise(r *rand.Rand, xs []float64, phi float64) {
	e := Sigma * r.NormFloat64()
	w := Sigma * math.Sqrt(1-phi*phi)
	for i := range xs {
		if i > 0 {
			e = phi*e + w*r.NormFloat64()
		}
		xs[i] = e
	}
}

// Generate makes a series of n points of the given kind, its noise of
// lag-1 autocorrelation phi.
func Generate(r *rand.Rand, kind Kind, n int, phi float64) Series {
	s := Series{Kind: kind, Values: make([]float64, n), SpikeAt: -1, NearAt: -1}
	noise(r, s.Values, phi)
	for i := range s.Values {
		s.Values[i] += Level
	}
	outliers := func() {
		for i := range s.Values {
			if r.Float64() < 0.02 {
				s.Values[i] += Sigma * (4 + 4*r.Float64())
			}
		}
	}
	spike := func() {
		s.SpikeAt = r.IntN(n)
		sign := 1.0
		if r.IntN(2) == 0 {
			sign = -1
		}
		s.Values[s.SpikeAt] += sign * Sigma * (8 + 4*r.Float64())
	}
	switch kind {
	case Outliers:
		outliers()
	case Spike:
		spike()
	case Steps:
		s.Steps = stepPlaces(r, n, 1+r.IntN(3))
		for _, at := range s.Steps {
			size := float64(1 + r.IntN(6))
			if r.IntN(2) == 0 {
				size = -size
			}
			s.Sizes = append(s.Sizes, size)
			for i := at; i < n; i++ {
				s.Values[i] += size * Sigma
			}
		}
		outliers()
		spike()
		// One build 6σ to 10σ off, the 1st to 5th before or after a step.
		at := s.Steps[r.IntN(len(s.Steps))]
		d := r.IntN(5) // at is the first build after
		if r.IntN(2) == 0 {
			d = -1 - d
		}
		if i := at + d; i >= 0 && i < n {
			s.NearAt = i
			sign := 1.0
			if r.IntN(2) == 0 {
				sign = -1
			}
			s.Values[i] += sign * Sigma * (6 + 4*r.Float64())
		}
	case Drift:
		total := Sigma * (1 + 2*r.Float64())
		for i := range s.Values {
			s.Values[i] += total * float64(i) / float64(n-1)
		}
	}
	return s
}

// stepPlaces draws k step indices at least MinDistance points from the
// ends and 20 apart, in order.
func stepPlaces(r *rand.Rand, n, k int) []int {
	for {
		at := make([]int, k)
		for i := range at {
			at[i] = MinDistance + r.IntN(n-2*MinDistance+1)
		}
		slices.Sort(at)
		ok := true
		for i := 1; i < k; i++ {
			if at[i]-at[i-1] < 20 {
				ok = false
			}
		}
		if ok {
			return at
		}
	}
}

// Config is one study.
type Config struct {
	Seed     uint64
	PerKind  int     // series of each kind
	N        int     // points per series
	Phi      float64 // the noise's lag-1 autocorrelation
	Detector changepoint.Options
}

// Result holds the study's counts.
type Result struct {
	Config Config
	// Series counts the series of each kind, Found the steps reported in
	// them.
	Series, Found map[Kind]int
	// TruePos counts reported steps within ±Tolerance of a true step (of
	// any size); Reported the steps reported in step series.
	TruePos, Reported int
	// BigSteps counts the true steps of at least 2σ, BigFound those
	// located within ±Tolerance.
	BigSteps, BigFound int
	// BySize counts true steps and those located, by size in σ (1–6).
	BySize, BySizeFound [7]int
	// ByDistance counts the true steps of at least 2σ and those located,
	// by distance to the nearer end: under 10 builds, 10–19, 20 or more.
	ByDistance, ByDistanceFound [3]int
	// NearSteps counts the true steps of at least 2σ with the one-build
	// outlier within 5 builds, NearFound those located.
	NearSteps, NearFound int
	// SpikeSteps counts spikes reported as a step: a step within
	// ±Tolerance of a spike and more than 5 points from any true step (a
	// spike right next to a true step can shift where that step is
	// located, which counts against precision and recall instead).
	SpikeSteps int
	// SpikeOnly counts those of SpikeSteps in the Spike family, whose
	// series have no step at all.
	SpikeOnly int
}

// Precision is the share of steps reported in step series that lie within
// ±Tolerance of a true step.
func (r Result) Precision() float64 { return ratio(r.TruePos, r.Reported) }

// Recall is the share of true steps of at least 2σ located within
// ±Tolerance.
func (r Result) Recall() float64 { return ratio(r.BigFound, r.BigSteps) }

// FalsePer100 is the steps reported per 100 series without a step (the
// stationary, outlier and spike families).
func (r Result) FalsePer100() float64 {
	n := r.Series[Stationary] + r.Series[Outliers] + r.Series[Spike]
	f := r.Found[Stationary] + r.Found[Outliers] + r.Found[Spike]
	return 100 * ratio(f, n)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Run runs the study: PerKind series of each kind, seeded by Seed.
func Run(c Config) (Result, error) {
	res := Result{Config: c, Series: map[Kind]int{}, Found: map[Kind]int{}}
	for _, kind := range []Kind{Stationary, Outliers, Spike, Steps, Drift} {
		r := rand.New(rand.NewPCG(c.Seed, uint64(kind)))
		for range c.PerKind {
			s := Generate(r, kind, c.N, c.Phi)
			steps, err := changepoint.Detect(s.Values, c.Detector)
			if err != nil {
				return res, err
			}
			res.Series[kind]++
			res.Found[kind] += len(steps)
			res.score(s, steps)
		}
	}
	return res, nil
}

// score matches the reported steps to the true ones, each at most once.
func (res *Result) score(s Series, steps []changepoint.Step) {
	used := make([]bool, len(s.Steps))
	for _, st := range steps {
		matched := false
		for i, at := range s.Steps {
			if !used[i] && abs(st.Index-at) <= Tolerance {
				used[i], matched = true, true
				break
			}
		}
		if matched {
			res.TruePos++
		} else if s.SpikeAt >= 0 && abs(st.Index-s.SpikeAt) <= Tolerance && !near(s.Steps, st.Index, 5) {
			res.SpikeSteps++
			if s.Kind == Spike {
				res.SpikeOnly++
			}
		}
	}
	if s.Kind == Steps {
		res.Reported += len(steps)
	}
	for i, size := range s.Sizes {
		k := int(math.Abs(size))
		res.BySize[k]++
		if used[i] {
			res.BySizeFound[k]++
		}
		if k < 2 {
			continue
		}
		res.BigSteps++
		dist := min(s.Steps[i], len(s.Values)-s.Steps[i])
		b := 0
		if dist >= 20 {
			b = 2
		} else if dist >= 10 {
			b = 1
		}
		res.ByDistance[b]++
		nearOutlier := s.NearAt >= 0 && abs(s.NearAt-s.Steps[i]) <= 5
		if nearOutlier {
			res.NearSteps++
		}
		if used[i] {
			res.BigFound++
			res.ByDistanceFound[b]++
			if nearOutlier {
				res.NearFound++
			}
		}
	}
}

// near tells whether some index of at lies within d of i.
func near(at []int, i, d int) bool {
	for _, a := range at {
		if abs(a-i) <= d {
			return true
		}
	}
	return false
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Write prints the result's figures.
func (r Result) Write(w io.Writer) {
	fmt.Fprintf(w, "φ %g, min segment %d, alpha %g, %d series of %d points per family, seed %d\n",
		r.Config.Phi, r.Config.Detector.MinSegment, r.Config.Detector.Alpha, r.Config.PerKind, r.Config.N, r.Config.Seed)
	fmt.Fprintf(w, "steps >= 2σ: precision %.3f (%d of %d reported), recall %.3f (%d of %d within ±%d)\n",
		r.Precision(), r.TruePos, r.Reported, r.Recall(), r.BigFound, r.BigSteps, Tolerance)
	fmt.Fprint(w, "recall by size:")
	for k := 1; k <= 6; k++ {
		fmt.Fprintf(w, " %dσ %.2f", k, ratio(r.BySizeFound[k], r.BySize[k]))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "recall >= 2σ by distance to the nearer end: 6–9 %.2f, 10–19 %.2f, 20+ %.2f; with a one-build outlier within 5 builds %.3f (%d of %d)\n",
		ratio(r.ByDistanceFound[0], r.ByDistance[0]), ratio(r.ByDistanceFound[1], r.ByDistance[1]),
		ratio(r.ByDistanceFound[2], r.ByDistance[2]), ratio(r.NearFound, r.NearSteps), r.NearFound, r.NearSteps)
	fmt.Fprintf(w, "false steps per 100 series without a step: %.2f (stationary %d, outliers %d, spike %d)\n",
		r.FalsePer100(), r.Found[Stationary], r.Found[Outliers], r.Found[Spike])
	fmt.Fprintf(w, "spikes reported as a step: %d (in series of the spike family: %d)\n", r.SpikeSteps, r.SpikeOnly)
	fmt.Fprintf(w, "drift 1–3σ over the series: %.2f steps per series\n", ratio(r.Found[Drift], r.Series[Drift]))
}

// Middle measures location alone: reps series of n points with slow
// outliers (as the Outliers family, noise of lag-1 autocorrelation phi)
// and one step of size σ at n/2; it returns the share located within ±1. It separates what the estimator
// can do from what the Steps family's neighbouring steps, spikes and
// ends take away.
func Middle(seed uint64, n, reps int, size, phi float64, opt changepoint.Options) (float64, error) {
	r := rand.New(rand.NewPCG(seed, uint64(size*1000)))
	found := 0
	for range reps {
		s := Generate(r, Outliers, n, phi)
		for i := n / 2; i < n; i++ {
			s.Values[i] += size * Sigma
		}
		steps, err := changepoint.Detect(s.Values, opt)
		if err != nil {
			return 0, err
		}
		if near(stepIndices(steps), n/2, 1) {
			found++
		}
	}
	return ratio(found, reps), nil
}

func stepIndices(steps []changepoint.Step) []int {
	at := make([]int, len(steps))
	for i, s := range steps {
		at[i] = s.Index
	}
	return at
}
