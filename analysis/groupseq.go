package analysis

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/mathext"
)

// MaxCalibratedRounds is the largest max_trials for which the boundary is
// calibrated to the cap (the recursion costs O(max rounds^1.5) per design);
// above it the untruncated t-mixture sequence, valid at any stopping time,
// is used instead.
const MaxCalibratedRounds = 1000

// obfSpent is the two-sided error the O'Brien–Fleming-type spending
// function of Lan & DeMets (1983), "Discrete sequential boundaries for
// clinical trials", Biometrika 70: 659–663, allows by information fraction
// t: 2 − 2Φ(z_{α/2}/√t). It spends almost nothing early (a decision there
// needs a huge effect) and keeps the last look's critical value near the
// fixed-n one, so a run that reaches max_trials loses little power. (The
// Pocock type, which spends evenly, was tried: with a look every round its
// early looks come at a few degrees of freedom, where the t conversion
// below is poor, and its A/A false-positive rate rose to 6%.)
func obfSpent(alpha, t float64) float64 {
	switch {
	case t <= 0:
		return 0
	case t >= 1:
		return alpha
	}
	z := -mathext.NormalQuantile(alpha / 2)
	return math.Erfc(z / math.Sqrt(t) / math.Sqrt2)
}

// The recursion works on the score scale S_k = Σ x_i/σ (unit-variance
// increments) on a grid of cells of width gsStep; gsBand and gsTail bound
// the kernel and the grid in standard deviations (the mass beyond them is
// below 1e-16). The rounding to cell centres adds h²/12 of variance per
// look (Sheppard's correction), so the kernel's increment has variance
// 1 − h²/12 and the two together the unit one: without it the boundaries
// stood 0.05% high on average (up to 0.08%) against SciPy and the repeated
// p-value on the coarse grid 0.7–4.8% high; with it 0.006% (worst 0.04%)
// and 0.07–0.7% (groupseq_reference_test.go, repeatedp_reference_test.go).
const (
	gsStep = 0.1
	// gsStepP is the coarser grid of the repeated p-value's bisection,
	// six times cheaper; consistency with the interval at α is kept
	// exactly by Result.
	gsStepP = 0.25
	gsBand  = 8.5
	gsTail  = 9.0
)

// gsWalker computes a two-sided group-sequential boundary with a look
// after every round k = 2..K (a paired t statistic needs two rounds) by
// the recursive numerical integration of Armitage, McPherson & Rowe (1969),
// "Repeated significance tests on accumulating data", J. R. Statist. Soc.
// A 132: 235–244, as in Jennison & Turnbull (2000), "Group Sequential
// Methods with Applications to Clinical Trials", ch. 19: the sub-density of
// S_k on the paths not yet stopped is carried from look to look by
// convolution with the N(0, 1) increment, and each look's boundary b_k is
// the point where the mass beyond ±b_k equals the error the spending
// function allows at that look.
type gsWalker struct {
	alpha   float64
	maxK    int
	h       float64   // cell width
	k       int       // looks (rounds) done
	spent   float64   // error spent so far
	src     []float64 // sub-density masses at cells −m..m, m = (len−1)/2
	kernel  []float64 // N(0,1) mass of each cell offset −D..D
	scratch []float64
}

func newGSWalker(alpha float64, maxK int, h float64) *gsWalker {
	d := int(math.Ceil(gsBand / h))
	w := &gsWalker{alpha: alpha, maxK: maxK, h: h, src: []float64{1}, kernel: make([]float64, 2*d+1)}
	sd := math.Sqrt(1 - h*h/12) // the binning adds the rest (Sheppard)
	for i := range w.kernel {
		off := float64(i - d)
		w.kernel[i] = 0.5 * (math.Erfc(-(off+0.5)*h/sd/math.Sqrt2) - math.Erfc(-(off-0.5)*h/sd/math.Sqrt2))
	}
	w.clip(w.convolve(), math.Inf(1)) // round 1: no look
	return w
}

// convolve carries the sub-density one round on.
func (w *gsWalker) convolve() []float64 {
	m := (len(w.src) - 1) / 2
	d := (len(w.kernel) - 1) / 2
	r := m + d
	if c := int(math.Ceil(gsTail * math.Sqrt(float64(w.k+1)) / w.h)); c < r {
		r = c
	}
	n := 2*r + 1
	if cap(w.scratch) < n {
		w.scratch = make([]float64, n)
	}
	q := w.scratch[:n]
	clear(q)
	for i, p := range w.src {
		if p == 0 {
			continue
		}
		// source cell i−m lands on target cells i−m−d … i−m+d, index +r.
		lo := i - m - d + r
		kl := 0
		if lo < 0 {
			kl, lo = -lo, 0
		}
		kh := len(w.kernel)
		if hi := i - m + d + r + 1; hi > n {
			kh -= hi - n
		}
		for j, wt := range w.kernel[kl:kh] {
			q[lo+j] += p * wt
		}
	}
	return q
}

// clip ends the look at the round q was convolved to, with boundary b on
// the score scale (+Inf: no look), keeping the mass inside (−b, b).
func (w *gsWalker) clip(q []float64, b float64) {
	w.k++
	r := (len(q) - 1) / 2
	m := r
	if !math.IsInf(b, 1) {
		m = int(math.Floor(b/w.h + 0.5)) // the cell holding b
		if m > r {
			m = r
		}
	}
	src := make([]float64, 2*m+1)
	copy(src, q[r-m:r+m+1])
	if !math.IsInf(b, 1) && int(math.Floor(b/w.h+0.5)) <= r {
		// Keep the part of the edge cells inside ±b (mass uniform in a cell).
		f := (b - (float64(m)-0.5)*w.h) / w.h
		if m == 0 {
			src[0] *= 2 * b / w.h
		} else {
			src[0] *= f
			src[2*m] *= f
		}
	}
	w.src = src
}

// next does look k+1 and returns its nominal two-sided level: the
// probability under no change that a single N(0, 1) statistic is beyond
// the boundary, the level at which the look's t statistic is judged (the
// significance-level approach for unknown variance, Jennison & Turnbull
// 2000, §3.8). 0 means the look cannot reject.
func (w *gsWalker) next() float64 {
	k := w.k + 1
	q := w.convolve()
	if k < 2 || k > w.maxK {
		w.clip(q, math.Inf(1))
		return 0
	}
	a := obfSpent(w.alpha, float64(k)/float64(w.maxK)) - w.spent
	if !(a > 1e-300) {
		w.clip(q, math.Inf(1))
		return 0
	}
	r := (len(q) - 1) / 2
	// tail[m] = mass in cells |j| > m; find the boundary by walking inwards.
	tail, b := 0.0, math.NaN()
	for m := r; m >= 0; m-- {
		cell := q[r+m]
		if m > 0 {
			cell += q[r-m]
		}
		if tail+cell >= a {
			// b lies in cell m: the mass beyond b there is a − tail.
			frac := (a - tail) / cell
			if m == 0 {
				b = w.h / 2 * (1 - frac)
			} else {
				b = (float64(m) + 0.5 - frac) * w.h
			}
			break
		}
		tail += cell
	}
	if math.IsNaN(b) { // a exceeds the mass left: reject everything
		b = 0
	}
	w.spent += a
	w.clip(q, b)
	return math.Erfc(b / math.Sqrt(2*float64(k)))
}

// gsDesign is a group-sequential design at level α for at most maxK
// rounds: the nominal two-sided level of each look and the matching
// Student t critical value (ν = k − 1) for the repeated confidence
// intervals (Jennison & Turnbull 1989, "Interim analyses: the repeated
// confidence interval approach", J. R. Statist. Soc. B 51: 305–361).
// Its fields never change once built; pcache, which only remembers work,
// is safe for concurrent use.
type gsDesign struct {
	alpha  float64
	maxK   int
	levels []float64 // levels[k], k = 0..maxK
	tcrit  []float64 // tcrit[k]: +Inf where the look cannot reject
	pcache gsPCache
	// trimmed holds, per SequentialOptions.Trim, the t critical values of
	// the trimmed analysis' looks (trimmedCrit), built on first use.
	trimmed sync.Map // float64 → *gsTrimmed
}

// gsTrimmed is one trim's critical values, built once.
type gsTrimmed struct {
	once sync.Once
	crit []float64
}

// trimmedCrit is the design's critical values for the trimmed mean that
// cuts trim from each end: at look k, the t quantile of the look's level
// with h − 1 degrees of freedom for the h = k − 2⌊trim·k⌋ values kept
// (TrimmedLocation), +Inf before look 2. The t quantiles are most of the
// trimmed analysis' work, and they depend on the look and trim only, so
// a view that analyses after every round computes each once (about 0.6
// ms for 100 looks).
func (d *gsDesign) trimmedCrit(trim float64) []float64 {
	v, _ := d.trimmed.LoadOrStore(trim, &gsTrimmed{})
	t := v.(*gsTrimmed)
	t.once.Do(func() {
		t.crit = make([]float64, d.maxK+1)
		t.crit[0], t.crit[1] = math.Inf(1), math.Inf(1)
		for k := 2; k <= d.maxK; k++ {
			h := k - 2*int(trim*float64(k))
			t.crit[k] = studentTTailQuantile(d.levels[k]/2, float64(h-1))
		}
	})
	return t.crit
}

func newGSDesign(alpha float64, maxK int) *gsDesign {
	d := &gsDesign{alpha: alpha, maxK: maxK, levels: make([]float64, maxK+1), tcrit: make([]float64, maxK+1)}
	w := newGSWalker(alpha, maxK, gsStep)
	d.tcrit[0], d.tcrit[1] = math.Inf(1), math.Inf(1)
	for k := 2; k <= maxK; k++ {
		d.levels[k] = w.next()
		d.tcrit[k] = studentTTailQuantile(d.levels[k]/2, float64(k-1))
	}
	d.pcache.maxEntries = gsPCacheEntries(maxK)
	return d
}

// repeatedP is the smallest level α' at which the design's family (same
// spending function and cap) would have rejected at one of the looks with
// the given nominal two-sided p-values obs[k] (k = 2..): the repeated
// p-value (Jennison & Turnbull 2000, §9.1). Bisection on log α' to 0.2%
// relative; the upper end of the last bracket is returned, so p ≤ α' means
// rejection at α'. On the coarse grid gsStepP it is within 0.7% of the
// exact value (repeatedp_reference_test.go).
//
// The levels α' the bisection tries are the nodes of one fixed binary tree
// (it always starts from the same bracket and halves it the same number
// of times), and each one's look levels depend on α' and the design only,
// so the design remembers them (gsPCache): a caller that adds a round and
// asks again, as the suite stop rule does after every round, walks the
// tree's remembered nodes and carries each one a look further, instead of
// running every recursion again from the first round. The result is the
// same float64 as recomputing (TestRepeatedPCacheIdentical).
func (d *gsDesign) repeatedP(obs []float64) float64 {
	var scratch []float64 // the convolution's buffer, shared by this call's walkers
	rejects := func(a float64) bool {
		if e := d.pcache.entry(a, d.maxK); e != nil {
			return e.rejects(obs, d.maxK, &scratch)
		}
		w := newGSWalker(a, d.maxK, gsStepP)
		for k := 2; k < len(obs) && k <= d.maxK; k++ {
			if obs[k] <= w.next() {
				return true
			}
		}
		return false
	}
	lo, hi := math.Log(1e-9), 0.0
	if !rejects(1) {
		return 1
	}
	if rejects(1e-9) {
		return 1e-9
	}
	for hi-lo > 2e-3 {
		mid := (lo + hi) / 2
		if rejects(math.Exp(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Exp(hi)
}

// gsPCacheFloats bounds the float64s a design's repeated p-value cache may
// hold (8 MiB): entries are added while their worst case fits
// (gsPCacheEntries), and past that the levels not yet remembered are
// computed afresh each time, as without the cache. The bisection's tree
// has 2^14 + 1 nodes; 300 metrics of 10 rounds visit about 3,000 of them,
// and at 50 rounds they fill the cache (its 1,581 levels). Keeping only
// the tree's top levels, which every run shares, was tried: the deeper
// levels a run visits again at its next round matter more (a third more
// time a round at 100 × 50).
const gsPCacheFloats = 1 << 20

// gsPCacheEntries is how many levels' walkers fit in gsPCacheFloats at
// maxK rounds, at the most each can hold: its levels (maxK + 1), its
// sub-density (at most 2r + 1 cells, r the tail cut-off convolve applies
// at round maxK) and its kernel.
func gsPCacheEntries(maxK int) int {
	r := int(math.Ceil(gsTail * math.Sqrt(float64(maxK)) / gsStepP))
	d := int(math.Ceil(gsBand / gsStepP))
	per := (maxK + 1) + (2*r + 1) + (2*d + 1) + 32 // + the structs and the map, in float64s
	return gsPCacheFloats / per
}

// gsPCache remembers, for each level α' the repeated p-value's bisection
// has tried on the design (keyed by its exact bits), the looks' levels
// computed so far and the walker to compute more, up to maxEntries levels.
type gsPCache struct {
	mu         sync.Mutex
	m          map[uint64]*gsPEntry
	maxEntries int
}

type gsPEntry struct {
	mu     sync.Mutex
	w      *gsWalker // at look len(levels) − 1
	levels []float64 // levels[k]: look k's nominal level (k = 0, 1: none)
}

// entry is α's entry, added if there is room; nil when the cache is full.
func (c *gsPCache) entry(alpha float64, maxK int) *gsPEntry {
	key := math.Float64bits(alpha)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[key]
	if e == nil {
		if len(c.m) >= c.maxEntries {
			return nil
		}
		if c.m == nil {
			c.m = make(map[uint64]*gsPEntry)
		}
		// The walker is built under the lock, so a new entry is complete
		// before anyone else sees it (the kernel costs about a look).
		e = &gsPEntry{w: newGSWalker(alpha, maxK, gsStepP), levels: make([]float64, 2, maxK+1)}
		c.m[key] = e
	}
	return e
}

// rejects reports whether some look k = 2.. of obs is at or below the
// entry's level, carrying the walker on as far as obs needs. scratch is
// lent to the walker for the convolution and handed back.
func (e *gsPEntry) rejects(obs []float64, maxK int, scratch *[]float64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := 2; k < len(obs) && k <= maxK; k++ {
		if k == len(e.levels) {
			e.w.scratch = *scratch
			e.levels = append(e.levels, e.w.next())
			*scratch, e.w.scratch = e.w.scratch, nil
		}
		if obs[k] <= e.levels[k] {
			return true
		}
	}
	return false
}

// studentTTailQuantile returns x with P(T > x) = q for Student's t with df
// degrees of freedom, to 1e-12 relative at every df, from the body to tiny q where 1 − q rounds to 1 (studentTUpperQuantile;
// checked against SciPy in tquantile_reference_test.go). +Inf for q ≤ 1e-100.
func studentTTailQuantile(q, df float64) float64 {
	switch {
	case !(q > 1e-100): // the interval would be unbounded anyway
		return math.Inf(1)
	case q >= 0.5:
		return studentTQuantile(1-q, df) // 1 − q is exact for q in [0.5, 1]
	}
	return studentTUpperQuantile(q, df)
}
