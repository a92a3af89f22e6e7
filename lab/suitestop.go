package lab

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/perflab/perflab/analysis"
)

// suiteStop is "stop": "auto" for a benchmark suite (Experiment.Suite):
// after every complete round it compares every metric as the report will
// (analysis.Compare with the suite's options, family by family
// (SuiteFamilies): no primary, Benjamini–Hochberg across the benchmarks, the sequential paired analysis
// calibrated to the cap) and stops the run once every tested metric has a
// decided verdict (regression, improvement or no change): the stop reason
// is then exactly the report's verdicts. Metrics that cannot be tested
// (the same constant in both arms) are no members and do not hold it up.
type suiteStop struct {
	opt analysis.Options
	// compare is analysis.Compare with opt, of a Comparer: a round
	// changes one benchmark's metrics, and only theirs are analysed
	// again (the correction across them all is redone).
	compare  func([]analysis.MetricInput) analysis.Report
	metrics  map[string]*suiteSeries
	order    []string
	round    int
	pending  [2][]Metric // this round's metrics per arm
	seen     [2]bool
	complete int
	done     bool
	summary  string
	// decided is the benchmarks the last analysis has nothing more to
	// learn of (nil before the first): every tested metric of theirs
	// decided, or none testable after 3 rounds (the same constant in both
	// arms).
	decided map[string]bool
	spec    *BenchSpec // the suite's benchmarks
	// capPer is the most rounds a benchmark gets (the sequential design's
	// calibration, Experiment.MetricRoundsCap); capped is those that have
	// them, exhausted that every benchmark is decided or capped.
	capPer    int
	devices   int // devices of the run (a pool's rounds run side by side)
	capped    map[string]bool
	exhausted bool
}

// wanted is the benchmarks the next rounds run, qualified by package
// (BenchSpec.isWanted): every benchmark of the suite but the decided ones
// (nil, all of them, before the first analysis). A benchmark decided at
// one look that the next look, with the others' new rounds, finds
// inconclusive again (the Benjamini–Hochberg threshold moves with the
// family) is wanted again; one not yet run is wanted.
func (s *suiteStop) wanted() map[string]bool {
	if s.decided == nil || s.spec == nil {
		return nil
	}
	out := map[string]bool{}
	for _, r := range s.spec.refs() {
		q := path.Base(s.spec.Packages[r.pkg].Path) + "." + r.name
		if !s.finished(r.name) && !s.finished(q) {
			out[q] = true
		}
	}
	return out
}

// finished reports whether benchmark b gets no more rounds: decided, or
// at its cap.
func (s *suiteStop) finished(b string) bool { return s.decided[b] || s.capped[b] }

// margin is how many rounds of a benchmark may be under way or not yet
// analysed when its next round is handed out: none for one device (its
// runner analyses each round as it ends), else a round of every device
// not yet analysed and one in flight on every other.
func (s *suiteStop) margin() int {
	if s.devices <= 1 {
		return 0
	}
	return 2*s.devices - 1
}

// suiteSeries is one metric's complete rounds.
type suiteSeries struct {
	unit, better string
	pairs        []analysis.Pair
	a, b         []float64
}

func newSuiteStop(exp *Experiment, devices int) *suiteStop {
	o := analysis.DefaultOptions()
	o.Alpha, o.Confidence, o.ThresholdPct = exp.Alpha, exp.Confidence, exp.Threshold
	o.Correction, o.Sequential, o.SequentialMaxRounds = analysis.CorrectionBH, true, exp.MetricRoundsCap()
	o.SequentialTrim = exp.SequentialTrim
	o.SkipUnpairedEstimates, o.Resamples = true, 200
	o.Designs = new(analysis.SequentialDesigns)
	cmp := analysis.NewComparer(o).Compare
	if exp.Suite != nil && exp.Suite.Metrics != "" && exp.Suite.Metrics != FamiliesAll {
		fc, list := new(analysis.FamilyComparers), exp.Suite.Metrics
		cmp = func(in []analysis.MetricInput) analysis.Report {
			r, _ := analysis.CompareFamilies(in, SuiteFamilies(list, in), o, fc)
			return r
		}
	}
	st := &suiteStop{opt: o, compare: cmp, metrics: map[string]*suiteSeries{}, round: -1, capPer: exp.MetricRoundsCap(),
		devices: max(devices, 1)}
	if b, ok := exp.Builds[ArmControl]; ok {
		st.spec = b.Bench
	}
	return st
}

// add takes a counted trial's metrics; a round is analysed once both arms
// have reported (a round with a failed trial is dropped).
func (s *suiteStop) add(t *Trial) {
	if t.Round != s.round {
		s.pending, s.seen, s.round = [2][]Metric{}, [2]bool{}, t.Round
	}
	arm := map[string]int{ArmControl: 0, ArmTreatment: 1}
	i, ok := arm[t.Arm]
	if !ok || t.Status != StatusOK {
		return
	}
	s.pending[i], s.seen[i] = t.Metrics, true
	if s.seen[0] && s.seen[1] {
		s.flush()
	}
}

func (s *suiteStop) flush() {
	b := map[string]float64{}
	for _, m := range s.pending[1] {
		b[m.Name] = m.Value
	}
	for _, m := range s.pending[0] {
		vb, ok := b[m.Name]
		if !ok {
			continue
		}
		ser := s.metrics[m.Name]
		if ser == nil {
			ser = &suiteSeries{unit: m.Unit, better: m.Better}
			s.metrics[m.Name] = ser
			s.order = append(s.order, m.Name)
		}
		ser.pairs = append(ser.pairs, analysis.Pair{A: m.Value, B: vb})
		ser.a, ser.b = append(ser.a, m.Value), append(ser.b, vb)
	}
	s.pending, s.seen = [2][]Metric{}, [2]bool{}
	s.complete++
	var in []analysis.MetricInput
	for _, name := range s.order {
		ser := s.metrics[name]
		in = append(in, analysis.MetricInput{Name: name, Unit: ser.unit, Better: ser.better,
			Samples: [][]float64{ser.a, ser.b}, Pairs: ser.pairs})
	}
	rep := s.compare(in)
	count := map[string]int{}
	members := 0
	s.done = true
	undecided, tested := map[string]bool{}, map[string]bool{}
	for _, m := range rep.Metrics {
		if !m.PAdjusted.Defined() {
			continue // no member of the family: it holds nothing up
		}
		members++
		count[m.Verdict]++
		tested[BenchOfMetric(m.Name)] = true
		if m.Verdict == analysis.VerdictInconclusive {
			s.done = false
			undecided[BenchOfMetric(m.Name)] = true
		}
	}
	s.decided, s.capped = map[string]bool{}, map[string]bool{}
	for name, ser := range s.metrics {
		b := BenchOfMetric(name)
		if !undecided[b] && (tested[b] || len(ser.pairs) >= 3) {
			s.decided[b] = true
		}
		// In a pool, each device's last round is analysed when it asks
		// for its next one, and the others' may be in flight: stop
		// handing rounds out early enough that none goes past the cap.
		if s.capPer > 0 && len(ser.pairs) >= s.capPer-s.margin() {
			s.capped[b] = true
		}
	}
	if s.spec != nil {
		s.exhausted = len(s.wanted()) == 0
	}
	s.done = s.done && members > 0
	var parts []string
	for v, n := range count {
		parts = append(parts, fmt.Sprintf("%d %s", n, v))
	}
	sort.Strings(parts)
	s.summary = fmt.Sprintf("%d tested metrics: %s", members, strings.Join(parts, ", "))
}

func (s *suiteStop) why(reason string, cap int) string {
	switch {
	case s.done:
		most := 0
		for _, ser := range s.metrics {
			most = max(most, len(ser.pairs))
		}
		return fmt.Sprintf("decided after %d rounds (%d of the benchmark run most): every tested benchmark metric decided (%s)", s.complete, most, s.summary)
	case s.exhausted || reason == "completed":
		if s.spec != nil && s.capPer > 0 {
			return fmt.Sprintf("max_trials (%d rounds of each benchmark) reached with benchmarks undecided (%s)", s.capPer, s.summary)
		}
		return fmt.Sprintf("max_trials (%d per arm) reached with benchmarks undecided (%s)", cap, s.summary)
	}
	return ""
}
