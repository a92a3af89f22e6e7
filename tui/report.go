package tui

import (
	"fmt"
	"math"
	"sort"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

// analyze compares the counted samples with opt, the plan's options
// (engine.Options), exactly as perflab report does (same options, same seed). It
// runs in a tea.Cmd, never in Update or View, at most one at a time. The
// live panels need no shortcut: at 10,000 trials the full analysis with
// 10,000 bootstrap resamples takes about 6 ms here (BenchmarkAnalysis).
func analyze(ms []analysis.MetricInput, opt analysis.Options) panelData {
	n, builds := 0, 2
	for _, m := range ms {
		for _, x := range m.Samples {
			n += len(x)
		}
		builds = max(builds, len(m.Samples))
	}
	opt.AnytimeValid = true // the panels are looked at after every trial
	var r analysis.Report
	var results []analysis.MetricResult
	if builds == 2 {
		r = analysis.Compare(ms, opt)
		results = r.Metrics
	} else {
		// Every build against the base, one family of tests (as perflab
		// report): a row per metric and build, named "metric C".
		v := analysis.CompareVersus(ms, opt)
		if len(v.Comparisons) > 0 {
			r = v.Comparisons[0]
		}
		for i := range r.Metrics {
			for j, c := range v.Comparisons {
				m := c.Metrics[i]
				m.Name += " " + string(rune('B'+j))
				results = append(results, m)
			}
		}
	}
	pd := panelData{
		alpha: r.Alpha, confidence: r.Confidence, correction: analysis.FamilyShort(r), test: r.PrimaryTest,
		resamples: opt.Resamples, n: n, builds: builds,
	}
	// A pool's per-device analysis (B against A) of the first metric,
	// for the lanes.
	if len(r.Metrics) > 0 && r.Metrics[0].Pool != nil {
		pd.pool, pd.poolMetric = r.Metrics[0].Pool, r.Metrics[0].Name
	}
	for _, m := range results {
		// The p that p adj corrects (as perflab report's table shows it).
		p := float64(analysis.TestedP(m, r.PrimaryTest))
		if m.Paired != nil {
			pd.paired = true
		}
		seq := seqPanel{delta: math.NaN(), low: math.NaN(), high: math.NaN(), p: math.NaN()}
		if s := m.Sequential; s != nil && m.PAdjusted.Defined() {
			seq = seqPanel{ok: true, delta: float64(s.DeltaPct), low: float64(s.CILowPct), high: float64(s.CIHighPct),
				p: float64(s.P), decision: s.Decision, n: s.N}
		}
		if m.Decision.Method == analysis.MethodSequential {
			pd.sequential = true
			if k := opt.SequentialMaxRounds; k >= 2 && k <= analysis.MaxCalibratedRounds {
				pd.seqCap = k
			}
		}
		pd.metrics = append(pd.metrics, metricPanel{
			name: m.Name, unit: m.Unit, better: m.Better,
			nA: m.A.N, nB: m.B.N, medA: float64(m.A.Median), medB: float64(m.B.Median),
			deltaPct: float64(m.Decision.DeltaPct),
			ciLow:    float64(m.Decision.CILowPct), ciHigh: float64(m.Decision.CIHighPct), ciLevel: m.Decision.Confidence, seq: seq,
			p: p, pAdj: float64(m.PAdjusted), welchP: float64(m.Welch.P), kwP: math.NaN(),
			mde: float64(m.MDEPct), verdict: m.Verdict, warnings: m.Warnings,
		})
	}
	for _, w := range r.Warnings {
		pd.warnings = append(pd.warnings, w)
	}
	return pd
}

// analyzeSession is analyze of the regime the panels should show: when
// toggles of the controls or the order split evs into regimes, the one
// sessions.ChooseRegime picks (the latest with enough trials per arm, as
// perflab report does), its samples folded again from its trials; the
// panel lists the regimes and warns when they differ. The "order p" column
// is that regime's order effect (sessions.OrderEffects, as report shows
// it): A-first against B-first rounds, which a drift does not move.
func analyzeSession(in []analysis.MetricInput, evs []lab.Event, plan *lab.Experiment, opt analysis.Options) panelData {
	rc, err := sessions.ChooseRegime(evs, "", opt)
	if err != nil {
		return analyze(in, opt)
	}
	var pd panelData
	if rc.Pick < 0 {
		pd = analyze(in, opt)
	} else {
		f := engine.NewFold(plan)
		for _, e := range rc.Events {
			f.Add(e)
		}
		pd = analyze(f.Inputs(), opt)
		pd.regimes = rc.Regimes
		pd.regimePick = rc.Pick
		pd.regimeWhy = rc.Analysed
		pd.warnings = append(pd.warnings, rc.Differ...)
	}
	for i := range pd.metrics {
		for _, o := range rc.Order {
			if o.Metric == pd.metrics[i].name {
				pd.metrics[i].kwP = float64(o.P)
			}
		}
	}
	_, warns := sessions.OrderEffectLines(rc.Order, opt.Alpha)
	pd.warnings = append(pd.warnings, warns...)
	pd.warnings = append(pd.warnings, sessions.HostWarnings(rc.Events)...)
	pd.warnings = append(pd.warnings, sessions.TrialNotes(rc.Events)...)
	if plan != nil && plan.Suite != nil {
		// A suite's list: the changed benchmarks on top (what the run
		// found), then those still undecided, then the unchanged ones,
		// then those without a test; the rest scroll.
		rank := func(m metricPanel) int {
			switch {
			case m.verdict == analysis.VerdictRegression || m.verdict == analysis.VerdictImprovement:
				return 0
			case m.verdict == analysis.VerdictInconclusive && !math.IsNaN(m.pAdj):
				return 1
			case m.verdict == analysis.VerdictNoChange:
				return 2
			}
			return 3
		}
		sort.SliceStable(pd.metrics, func(i, j int) bool { return rank(pd.metrics[i]) < rank(pd.metrics[j]) })
	}
	return pd
}

// stabilitySummary judges the probe samples so far, as every view does
// (sessions.StabilitySummary).
func stabilitySummary(ps []lab.ProbeSample) (string, []string) { return sessions.StabilitySummary(ps) }

// emptyPanel is the panel before any analysis: the settings the analysis
// will use, no metrics.
func emptyPanel(plan lab.Experiment) panelData {
	o := engine.Options(&plan)
	correction := o.Correction + " correction"
	if o.Primary != "" {
		correction = fmt.Sprintf("primary %s, %s for the rest", o.Primary, o.Correction)
	}
	return panelData{alpha: o.Alpha, confidence: o.Confidence, correction: correction, test: o.Test}
}
