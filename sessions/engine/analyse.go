package engine

import (
	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// Analysis is a session's comparison as every view gives it: for an A/B
// the Report; for an experiment of more builds also Versus, every build
// against the base (benchstat's layout, one family of tests across builds
// × metrics), and Report is then its first comparison (B against A).
type Analysis struct {
	Report analysis.Report
	Versus *analysis.Versus
	// Families are a suite's families of tests (analysis.CompareFamilies:
	// the time family, the allocations', ...), nil when every metric is
	// one family.
	Families []analysis.FamilySize
	// Names says, for a suite, what its names leave out (the GOMAXPROCS
	// suffix all of them had), "" otherwise.
	Names string
}

// Analyse compares inputs (Fold.Inputs or sessions.ArmInputs) for plan
// with opt (Options(plan), possibly changed by flags).
func Analyse(plan *lab.Experiment, inputs []analysis.MetricInput, opt analysis.Options) Analysis {
	if !plan.MultiArm() {
		if plan.Suite != nil && plan.Suite.Metrics != "" && plan.Suite.Metrics != lab.FamiliesAll {
			inputs, names := lab.SuiteNames(inputs)
			r, fams := analysis.CompareFamilies(inputs, lab.SuiteFamilies(plan.Suite.Metrics, inputs), opt, nil)
			return Analysis{Report: r, Families: fams, Names: names}
		}
		return Analysis{Report: analysis.Compare(inputs, opt)}
	}
	v := analysis.CompareVersus(inputs, opt)
	a := Analysis{Versus: &v}
	if len(v.Comparisons) > 0 {
		a.Report = v.Comparisons[0]
	}
	return a
}

// Reports lists the comparisons: the one Report, or one per build after
// the base.
func (a Analysis) Reports() []analysis.Report {
	if a.Versus != nil {
		return a.Versus.Comparisons
	}
	return []analysis.Report{a.Report}
}

// Table renders the comparison: analysis.Table, or analysis.VersusTable
// for several builds.
func (a Analysis) Table() string { return a.TableFit(0) }

// TableFit is Table with a suite's tables fitted to width columns
// (analysis.SuiteTableFit; 0: no limit).
func (a Analysis) TableFit(width int) string {
	if a.Versus != nil {
		return analysis.VersusTable(*a.Versus)
	}
	if a.Families != nil {
		summary, body := analysis.SuiteTableFit(a.Report, a.Families, a.Names, width)
		return summary + "\n" + body
	}
	return analysis.Table(a.Report)
}

// Regression reports whether any build regressed on any metric.
func (a Analysis) Regression() bool {
	for _, r := range a.Reports() {
		for _, m := range r.Metrics {
			if m.Verdict == analysis.VerdictRegression {
				return true
			}
		}
	}
	return false
}

// HasComparison reports whether any metric of any build has values in
// both arms, so that its table has something in it.
func (a Analysis) HasComparison() bool {
	for _, r := range a.Reports() {
		for _, m := range r.Metrics {
			if m.A.N > 0 && m.B.N > 0 {
				return true
			}
		}
	}
	return false
}

// Warn adds report-level warnings (the first comparison's, which tables
// print once).
func (a *Analysis) Warn(ws ...string) {
	if len(ws) == 0 {
		return
	}
	a.Report.Warnings = append(a.Report.Warnings, ws...)
	if a.Versus != nil && len(a.Versus.Comparisons) > 0 {
		a.Versus.Comparisons[0].Warnings = append(a.Versus.Comparisons[0].Warnings, ws...)
	}
}
