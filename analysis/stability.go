package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
)

// StabilitySample is one MFLOPS probe sample: T seconds since the probe
// started, the throughput over the interval that ended at T, and the
// frequency read back from each CPU cluster (kHz, empty when unreadable).
type StabilitySample struct {
	T       float64
	MFLOPS  float64
	FreqKHz []int
	TempC   float64
}

// StabilityOptions are the thresholds of the stable/unstable verdict.
type StabilityOptions struct {
	MaxCV             float64 // coefficient of variation (fraction); default 0.02
	MaxDriftPctPerMin float64 // |regression slope| as % of the mean per minute; default 0.5
	MinStepPct        float64 // smallest mean shift reported as a step, % of the mean; default 3
	MinSegment        int     // fewest samples on each side of a step; default 5
	StepZ             float64 // step statistic threshold in robust noise units; default 6
	ThrottleDropPct   float64 // a read-back frequency falling this much between samples is a throttle event; default 3
	MinSamples        int     // fewer samples cannot be judged stable; default 10
}

// DefaultStabilityOptions returns the thresholds perflab uses.
func DefaultStabilityOptions() StabilityOptions {
	return StabilityOptions{MaxCV: 0.02, MaxDriftPctPerMin: 0.5, MinStepPct: 3, MinSegment: 5, StepZ: 6,
		ThrottleDropPct: 3, MinSamples: 10}
}

func (o StabilityOptions) withDefaults() StabilityOptions {
	d := DefaultStabilityOptions()
	if o.MaxCV <= 0 {
		o.MaxCV = d.MaxCV
	}
	if o.MaxDriftPctPerMin <= 0 {
		o.MaxDriftPctPerMin = d.MaxDriftPctPerMin
	}
	if o.MinStepPct <= 0 {
		o.MinStepPct = d.MinStepPct
	}
	if o.MinSegment <= 0 {
		o.MinSegment = d.MinSegment
	}
	if o.StepZ <= 0 {
		o.StepZ = d.StepZ
	}
	if o.ThrottleDropPct <= 0 {
		o.ThrottleDropPct = d.ThrottleDropPct
	}
	if o.MinSamples <= 0 {
		o.MinSamples = d.MinSamples
	}
	return o
}

// StabilityStep is a change point: the mean throughput before and after.
type StabilityStep struct {
	T         float64 `json:"t"`     // time of the first sample after the change
	Index     int     `json:"index"` // its index
	From      float64 `json:"from_mflops"`
	To        float64 `json:"to_mflops"`
	ChangePct float64 `json:"change_pct"`
}

// ThrottleEvent is a read-back frequency drop.
type ThrottleEvent struct {
	T       float64 `json:"t"`
	Cluster int     `json:"cluster"`
	FromKHz int     `json:"from_khz"`
	ToKHz   int     `json:"to_khz"`
}

// Stability is the verdict on a probe window. Its JSON form is the summary
// line of `perflab check --json`.
type Stability struct {
	Verdict        string          `json:"verdict"` // "stable" or "unstable"
	MeanMFLOPS     Float           `json:"mean_mflops"`
	CV             Float           `json:"cv"`
	DriftPctPerMin Float           `json:"drift_pct_per_min"`
	Steps          []StabilityStep `json:"steps"`
	ThrottleEvents int             `json:"throttle_events"`
	Reasons        []string        `json:"reasons"`

	N         int             `json:"-"`
	DurationS float64         `json:"-"`
	MaxTempC  float64         `json:"-"`
	Throttles []ThrottleEvent `json:"-"`
}

// Stable reports whether the verdict is "stable".
func (s Stability) Stable() bool { return s.Verdict == "stable" }

// StabilityOf judges whether performance was stable over the samples:
// mean, CV, drift (the least-squares slope in % of the mean per minute),
// step changes (binary segmentation on the mean with a robust noise
// estimate), throttle events (read-back frequency drops), and a verdict
// with the reason for each failed criterion.
func StabilityOf(samples []StabilitySample, opt StabilityOptions) Stability {
	opt = opt.withDefaults()
	s := Stability{Verdict: "unstable", MeanMFLOPS: undefined(), CV: undefined(), DriftPctPerMin: undefined(),
		Steps: []StabilityStep{}, Reasons: []string{}, N: len(samples)}
	if len(samples) == 0 {
		s.Reasons = append(s.Reasons, "no samples")
		return s
	}
	ts := make([]float64, len(samples))
	ys := make([]float64, len(samples))
	for i, x := range samples {
		ts[i], ys[i] = x.T, x.MFLOPS
		s.MaxTempC = math.Max(s.MaxTempC, x.TempC)
	}
	s.DurationS = ts[len(ts)-1] - ts[0]
	sum := Summarize(ys)
	s.MeanMFLOPS, s.CV = sum.Mean, sum.CV
	mean := sum.Mean.Or(0)

	slope, se := stabilitySlope(ts, ys)
	if !math.IsNaN(slope) && mean != 0 {
		s.DriftPctPerMin = defined(slope * 60 / mean * 100)
	}
	s.Steps = stabilitySteps(samples, ys, mean, opt)
	s.Throttles = stabilityThrottles(samples, opt.ThrottleDropPct)
	s.ThrottleEvents = len(s.Throttles)

	var r []string
	if len(samples) < opt.MinSamples {
		r = append(r, fmt.Sprintf("too few samples to judge (%d, want at least %d)", len(samples), opt.MinSamples))
	}
	if mean <= 0 {
		r = append(r, "no throughput measured")
	}
	few := len(samples) < opt.MinSamples // too few to judge drift and steps
	if cv := s.CV.Or(0); cv > opt.MaxCV {
		x, lim := apart(cv*100, opt.MaxCV*100, 1)
		r = append(r, fmt.Sprintf("coefficient of variation %s%% above %s%%", x, lim))
	}
	if d := s.DriftPctPerMin; !few && d.Defined() && math.Abs(float64(d)) > opt.MaxDriftPctPerMin {
		// The rule is the one docs/devices.md states and the screens show:
		// |drift| ≤ MaxDriftPctPerMin. A drift the noise could explain
		// (|t| ≤ 3, typical of short windows) still fails it, since the
		// window cannot show the drift is small; the reason says so.
		dir := "falls"
		if d > 0 {
			dir = "rises"
		}
		x, lim := apart(math.Abs(float64(d)), opt.MaxDriftPctPerMin, 2)
		why := fmt.Sprintf("throughput %s %s%% per minute (limit %s%%)", dir, x, lim)
		if se > 0 && math.Abs(slope/se) <= 3 {
			why += "; could be noise: a longer check tells"
		}
		r = append(r, why)
	}
	if n := len(s.Steps); n > 0 && !few {
		st := s.Steps[0]
		r = append(r, fmt.Sprintf("%d step change(s) in throughput, first at t=%.0fs: %.0f → %.0f MFLOPS (%+.1f%%)",
			n, st.T, st.From, st.To, st.ChangePct))
	}
	if n := len(s.Throttles); n > 0 {
		e := s.Throttles[0]
		r = append(r, fmt.Sprintf("frequency fell %d time(s) while loaded (thermal throttling), first at t=%.0fs: cluster %d %d → %d MHz",
			n, e.T, e.Cluster, e.FromKHz/1000, e.ToKHz/1000))
	}
	if r == nil {
		r = []string{}
	}
	s.Reasons = r
	if len(r) == 0 {
		s.Verdict = "stable"
	}
	return s
}

// apart formats x and limit with dec decimals, or with more (up to 6)
// when those print alike, so that a value over its limit never reads
// "2.0% above 2.0%" (2.04 above 2.00 instead).
func apart(x, limit float64, dec int) (string, string) {
	for ; dec < 6; dec++ {
		if xs, ls := strconv.FormatFloat(x, 'f', dec, 64), strconv.FormatFloat(limit, 'f', dec, 64); xs != ls {
			return xs, ls
		}
	}
	return strconv.FormatFloat(x, 'f', dec, 64), strconv.FormatFloat(limit, 'f', dec, 64)
}

// stabilitySlope returns the least-squares slope of y on x and its standard error.
func stabilitySlope(x, y []float64) (slope, se float64) {
	n := float64(len(x))
	if len(x) < 3 {
		return math.NaN(), 0
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= n
	my /= n
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if sxx == 0 {
		return math.NaN(), 0
	}
	slope = sxy / sxx
	var rss float64
	for i := range x {
		e := y[i] - my - slope*(x[i]-mx)
		rss += e * e
	}
	se = math.Sqrt(rss / (n - 2) / sxx)
	return slope, se
}

// stabilityNoise estimates the sample-to-sample noise SD from the median
// absolute first difference, which steps and slow drifts barely move.
func stabilityNoise(ys []float64) float64 {
	if len(ys) < 3 {
		return 0
	}
	d := make([]float64, len(ys)-1)
	for i := range d {
		d[i] = math.Abs(ys[i+1] - ys[i])
	}
	slices.Sort(d)
	// For Gaussian noise, a difference has SD σ√2 and median |diff| 0.6745·σ√2.
	return medianSorted(d) / 0.6745 / math.Sqrt2
}

// stabilitySteps runs binary segmentation: split where the two sides' means
// differ most relative to the noise, keep the split when the difference is
// both significant (StepZ) and large (MinStepPct), and recurse.
func stabilitySteps(samples []StabilitySample, ys []float64, mean float64, opt StabilityOptions) []StabilityStep {
	sigma := stabilityNoise(ys)
	if mean == 0 {
		return []StabilityStep{}
	}
	// Floor the noise at 0.1% of the mean so a noiseless series still needs a real shift.
	sigma = math.Max(sigma, 0.001*math.Abs(mean))
	prefix := make([]float64, len(ys)+1)
	for i, y := range ys {
		prefix[i+1] = prefix[i] + y
	}
	avg := func(lo, hi int) float64 { return (prefix[hi] - prefix[lo]) / float64(hi-lo) }
	var cuts []int
	var seg func(lo, hi int)
	seg = func(lo, hi int) {
		m := opt.MinSegment
		best, bestZ := -1, 0.0
		for k := lo + m; k <= hi-m; k++ {
			nl, nr := float64(k-lo), float64(hi-k)
			z := math.Abs(avg(lo, k)-avg(k, hi)) / sigma * math.Sqrt(nl*nr/(nl+nr))
			if z > bestZ {
				best, bestZ = k, z
			}
		}
		if best < 0 || bestZ < opt.StepZ {
			return
		}
		if math.Abs(avg(lo, best)-avg(best, hi)) < opt.MinStepPct/100*math.Abs(mean) {
			// Not large enough here, but a bigger step may hide in a sub-segment.
			seg(lo, best)
			seg(best, hi)
			return
		}
		cuts = append(cuts, best)
		seg(lo, best)
		seg(best, hi)
	}
	seg(0, len(ys))
	sort.Ints(cuts)
	steps := []StabilityStep{}
	bounds := append(append([]int{0}, cuts...), len(ys))
	for i, c := range cuts {
		from, to := avg(bounds[i], c), avg(c, bounds[i+2])
		steps = append(steps, StabilityStep{T: samples[c].T, Index: c, From: stabilityRound1(from), To: stabilityRound1(to),
			ChangePct: stabilityRound1((to - from) / from * 100)})
	}
	// Adjacent segments whose means no longer differ enough are merged.
	out := steps[:0]
	for _, st := range steps {
		if math.Abs(st.To-st.From) >= opt.MinStepPct/100*math.Abs(mean) {
			out = append(out, st)
		}
	}
	return out
}

// stabilityThrottles counts read-back frequency drops of at least dropPct
// between consecutive samples, per cluster.
func stabilityThrottles(samples []StabilitySample, dropPct float64) []ThrottleEvent {
	var ev []ThrottleEvent
	for i := 1; i < len(samples); i++ {
		prev, cur := samples[i-1].FreqKHz, samples[i].FreqKHz
		for c := 0; c < len(prev) && c < len(cur); c++ {
			if prev[c] > 0 && cur[c] > 0 && float64(cur[c]) < float64(prev[c])*(1-dropPct/100) {
				ev = append(ev, ThrottleEvent{T: samples[i].T, Cluster: c, FromKHz: prev[c], ToKHz: cur[c]})
			}
		}
	}
	return ev
}

func stabilityRound1(x float64) float64 { return math.Round(x*10) / 10 }
