package analysis

import (
	"slices"
	"sync"
)

// Comparer is Compare for a caller that compares the same metrics again
// and again as rounds arrive, each round changing only a few of them (a
// benchmark suite's stop rule: a round runs one benchmark of a hundred).
// It keeps each metric's own statistics from the last call and computes
// again only those of the metrics whose input changed; the correction
// across metrics and the verdicts are then Compare's, over all of them.
// Its reports are Compare's with the same Options. It is not safe for
// concurrent use.
type Comparer struct {
	opt        Options
	last, next map[string]*comparedMetric // by name: the metrics of the last call, of this one
	mu         sync.Mutex                 // guards next while metrics are compared in parallel
}

// comparedMetric is one metric's input, as compared, and its statistics
// before the correction.
type comparedMetric struct {
	in      MetricInput
	primary string
	m       MetricResult
}

// NewComparer returns a Comparer with opt (a Designs of its own when
// opt has none, kept across its calls).
func NewComparer(opt Options) *Comparer {
	if opt.Designs == nil {
		opt.Designs = new(SequentialDesigns)
	}
	return &Comparer{opt: opt}
}

// Compare is Compare(metrics, opt) of the Comparer's Options.
func (c *Comparer) Compare(metrics []MetricInput) Report {
	c.next = make(map[string]*comparedMetric, len(metrics))
	r, opt := compareAll(metrics, c.opt, c)
	c.last, c.next = c.next, nil
	correctAndDecide([]*Report{&r}, opt)
	r.Geomeans = geomeans([]Report{r})
	return r
}

// kept is in's statistics from c's last call, if in is the same input.
// A nil c keeps none.
func (c *Comparer) kept(in MetricInput, opt Options) (MetricResult, bool) {
	if c == nil {
		return MetricResult{}, false
	}
	e, ok := c.last[in.Name]
	if !ok || e.primary != opt.Primary || !sameInput(e.in, in) {
		return MetricResult{}, false
	}
	c.mu.Lock()
	c.next[in.Name] = e
	c.mu.Unlock()
	return e.m.clone(), true
}

// compareMetric is compareMetric, kept for c's next call when c is not
// nil.
func (c *Comparer) compareMetric(in MetricInput, opt Options) MetricResult {
	m := compareMetric(in, opt)
	if c == nil {
		return m
	}
	m.atFamily = new(familySeqKept)
	c.mu.Lock()
	c.next[in.Name] = &comparedMetric{in: cloneInput(in), primary: opt.Primary, m: m}
	c.mu.Unlock()
	return m.clone()
}

// clone is a copy of m that the correction may change without changing
// m: it appends to the warnings and sets the paired analysis' MDE
// (correctMDEs; warnPoolDisagreement copies the pool analysis itself).
func (m MetricResult) clone() MetricResult {
	m.Warnings = slices.Clip(m.Warnings)
	if m.Paired != nil {
		p := *m.Paired
		m.Paired = &p
	}
	return m
}

// sameInput reports whether a and b are the same input, field by field
// (a NaN is never the same: its metric is computed again).
func sameInput(a, b MetricInput) bool {
	return a.Name == b.Name && a.Unit == b.Unit && a.Better == b.Better && a.DroppedRounds == b.DroppedRounds && a.Weight == b.Weight &&
		slices.EqualFunc(a.Samples, b.Samples, slices.Equal) && slices.Equal(a.Pairs, b.Pairs) &&
		slices.Equal(a.Strata, b.Strata) && slices.Equal(a.PairStrata, b.PairStrata) &&
		slices.EqualFunc(a.MorePairs, b.MorePairs, slices.Equal) && slices.Equal(a.MoreDropped, b.MoreDropped)
}

// cloneInput is a copy of in sharing no memory with it: the caller may
// append to its slices or change them in place.
func cloneInput(in MetricInput) MetricInput {
	in.Samples = cloneAll(in.Samples)
	in.Pairs = slices.Clone(in.Pairs)
	in.Strata, in.PairStrata = slices.Clone(in.Strata), slices.Clone(in.PairStrata)
	in.MorePairs, in.MoreDropped = cloneAll(in.MorePairs), slices.Clone(in.MoreDropped)
	return in
}

func cloneAll[T any](s [][]T) [][]T {
	if s == nil {
		return nil
	}
	out := make([][]T, len(s))
	for i, x := range s {
		out[i] = slices.Clone(x)
	}
	return out
}

// familySeqKept is a metric's sequential analysis at its family's level
// (atLevel), kept with its statistics by a Comparer: the level changes
// only with the family's size or the changes it reports, the analysis
// only with the metric's input, so most calls find it here.
type familySeqKept struct {
	alpha float64
	s     Sequential
	ok    bool
}

// get is the analysis kept at alpha; a nil k keeps none.
func (k *familySeqKept) get(alpha float64) (Sequential, bool) {
	if k == nil || !k.ok || k.alpha != alpha {
		return Sequential{}, false
	}
	return k.s, true
}

// set keeps s, the analysis at alpha.
func (k *familySeqKept) set(alpha float64, s Sequential) {
	if k != nil {
		*k = familySeqKept{alpha: alpha, s: s, ok: true}
	}
}
