package lab

import (
	"fmt"
	"math"

	"github.com/perflab/perflab/analysis"
)

// autoStop is the sequential stopping rule of "stop": "auto": after every
// round with one counted trial per arm it adds the round's log ratio of
// the primary metric (Experiment.PrimaryMetric, else the first metric of
// the first counted trial) to the sequential paired analysis
// (analysis.SequentialTest, the group-sequential design calibrated to the
// trial cap) and stops the run once the verdict the report will print for
// that metric (analysis.SequentialVerdict: the primary is a family of one
// at the full alpha) is decided. A nil autoStop (stop "fixed") never stops
// the run early.
type autoStop struct {
	metric   string // the primary metric of the plan, or the first of the first counted trial
	verdict  string // the decided verdict, once done
	test     *analysis.SequentialTest
	opt      analysis.SequentialOptions
	round    int
	vals     [2][]float64 // this round's counted values per arm
	done     bool         // the analysis has decided
	cap      int
	started  bool
	complete int        // complete rounds seen
	suite    *suiteStop // a benchmark suite's rule: every benchmark decided
}

// newAutoStop is the rule for exp run on devices side by side (1 alone,
// a pool's count in a pool).
func newAutoStop(exp *Experiment, devices int) *autoStop {
	if exp.Stop != StopAuto {
		return nil
	}
	a := &autoStop{cap: exp.TrialCap(), round: -1,
		opt: analysis.SequentialOptions{Alpha: exp.Alpha, ThresholdPct: exp.Threshold, MaxRounds: exp.TrialCap(),
			Trim: exp.SequentialTrim}}
	a.metric = exp.PrimaryMetric()
	if exp.Suite != nil {
		a.suite = newSuiteStop(exp, devices)
	}
	return a
}

// add takes a trial; a round is analysed when the next one starts.
func (a *autoStop) add(t *Trial) {
	if a == nil || t.Warmup {
		return
	}
	if a.suite != nil {
		a.suite.add(t)
		return
	}
	if t.Round != a.round {
		a.flush()
		a.round = t.Round
	}
	if t.Status != StatusOK {
		return
	}
	arm := 0
	if t.Arm == ArmTreatment {
		arm = 1
	} else if t.Arm != ArmControl {
		return
	}
	for _, m := range t.Metrics {
		if a.metric == "" {
			a.metric = m.Name
		}
		if m.Name != a.metric {
			continue
		}
		if !a.started {
			a.started = true
			a.opt.Better = m.Better
			a.test = analysis.NewSequentialTest(a.opt)
		}
		a.vals[arm] = append(a.vals[arm], m.Value)
	}
	if len(a.vals[0]) == 1 && len(a.vals[1]) == 1 {
		a.flush() // the round is complete: look now
	}
}

// flush analyses the round in progress when it holds one value per arm
// (a round broken by a failed trial is dropped).
func (a *autoStop) flush() {
	if len(a.vals[0]) == 1 && len(a.vals[1]) == 1 && a.vals[0][0] > 0 && a.vals[1][0] > 0 {
		a.test.Add(math.Log(a.vals[1][0] / a.vals[0][0]))
		a.complete++
		// Decided is the cheap look (no p-value); the verdict is then
		// the report's own, from the result with its p.
		a.done = false
		if a.test.Decided() {
			r := a.test.Result()
			a.verdict, _ = analysis.SequentialVerdict(r, r.P, a.opt.Alpha)
			a.done = a.verdict != analysis.VerdictInconclusive
		}
	}
	a.vals = [2][]float64{}
}

// decided reports whether the sequential analysis has decided.
func (a *autoStop) decided() bool {
	if a != nil && a.suite != nil {
		return a.suite.done || a.suite.exhausted
	}
	return a != nil && a.complete > 0 && a.done
}

// wantedBenches is the benchmarks of a suite still undecided (nil: all,
// before the first analysis, or for a run that is not a suite's with
// "stop": "auto").
func (a *autoStop) wantedBenches() map[string]bool {
	if a == nil || a.suite == nil {
		return nil
	}
	return a.suite.wanted()
}

// why says why the run stopped, for the end event.
func (a *autoStop) why(reason string) string {
	if a.suite != nil {
		return a.suite.why(reason, a.cap)
	}
	var r analysis.Sequential
	if a.test != nil {
		r = a.test.Result()
	}
	switch {
	case a.decided():
		return fmt.Sprintf("decided after %d rounds: %s %s (%s)", a.complete, a.metric, a.verdict, r.Reason)
	case reason == "completed":
		return fmt.Sprintf("max_trials (%d per arm) reached without a decision on %s: inconclusive (%s)", a.cap, a.metric, r.Reason)
	}
	return ""
}
