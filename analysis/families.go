package analysis

import (
	"fmt"
	"strings"
)

// Families: a list of metrics split into separate families of tests, each
// one Compare call over its own inputs (its own correction), and metrics
// shown beside them but tested in none (a rate derived from the time, a
// metric the same in every round). A suite tests one time metric per
// benchmark in one family, its allocations in another: a family of 44
// tests can reach a verdict at 11 rounds where one of 174 metrics needs 13.
// The verdict words still come from Compare alone; a shown metric's
// verdict says it was not tested and why.

// VerdictNotTested starts the verdict of a metric shown but tested in no
// family: "not tested (derived from ns/op)".
const VerdictNotTested = "not tested"

// FamilyInput is one metric's input and its family: a name ("time",
// "alloc", ...), or "" for a metric only shown, with Why saying why it is
// not tested ("derived from ns/op").
type FamilyInput struct {
	Family string
	Why    string
}

// FamilySize is one family of a CompareFamilies report: its name and how
// many of its metrics were tested (members, corrected together).
type FamilySize struct {
	Name    string `json:"name"`
	Metrics int    `json:"metrics"`
	Tested  int    `json:"tested"`
}

// CompareFamilies compares inputs family by family (fam[i] is input i's):
// each family is one compare call (c's Comparer for it when c is not nil,
// else Compare) with opt, a shown metric's statistics are Compare's too
// but its verdict is VerdictNotTested with the reason, its adjusted p
// undefined and no interval. The report lists the metrics in the inputs'
// order; its report-level fields are the first family's, its PrimaryTest
// the test the verdicts rest on.
func CompareFamilies(inputs []MetricInput, fam []FamilyInput, opt Options, c *FamilyComparers) (Report, []FamilySize) {
	var names []string
	byFam := map[string][]int{}
	for i := range inputs {
		f := fam[i].Family
		if _, ok := byFam[f]; !ok && f != "" {
			names = append(names, f)
		}
		byFam[f] = append(byFam[f], i)
	}
	if _, ok := byFam[""]; ok {
		names = append(names, "")
	}
	results := make([]MetricResult, len(inputs))
	var out Report
	var sizes []FamilySize
	first := true
	for _, f := range names {
		idx := byFam[f]
		in := make([]MetricInput, len(idx))
		for j, i := range idx {
			in[j] = inputs[i]
		}
		var r Report
		if c != nil {
			r = c.of(f, opt).Compare(in)
		} else {
			r = Compare(in, opt)
		}
		if first {
			out, first = r, false
			out.Metrics, out.Warnings = nil, nil
		}
		out.Warnings = append(out.Warnings, r.Warnings...)
		tested := 0
		for j, i := range idx {
			m := r.Metrics[j]
			if f == "" {
				m = notTested(m, fam[i].Why)
			} else if m.PAdjusted.Defined() {
				tested++
			}
			results[i] = m
		}
		if f != "" {
			sizes = append(sizes, FamilySize{Name: f, Metrics: len(idx), Tested: tested})
		}
	}
	out.Metrics = results
	out.PrimaryTest = testUsed(results, out.PrimaryTest)
	out.Geomeans = geomeans([]Report{out})
	return out, sizes
}

// notTested is m shown only: its summaries and estimate, no test.
func notTested(m MetricResult, why string) MetricResult {
	m.Verdict = VerdictNotTested
	if why != "" {
		m.Verdict += " (" + why + ")"
	}
	m.PAdjusted = undefined()
	d := &m.Decision
	d.CILowPct, d.CIHighPct, d.MDEPct, d.MoreTrials = undefined(), undefined(), undefined(), undefined()
	d.Significant, d.BelowThreshold, d.CannotDecide = false, false, ""
	d.Method = "shown, not tested"
	m.Warnings = nil
	m.TestDisagreement = ""
	return m
}

// testUsed names the test the tested metrics' verdicts rest on, when they
// all rest on one kind; else def (the options' unpaired test).
func testUsed(ms []MetricResult, def string) string {
	kinds := map[string]bool{}
	for _, m := range ms {
		if !m.PAdjusted.Defined() {
			continue
		}
		switch m.Decision.Method {
		case MethodPaired, MethodPairedBootstrap:
			kinds["wilcoxon-signed-rank (paired)"] = true
		case MethodSequential:
			kinds["sequential paired (group-sequential interval of the mean log ratio B/A)"] = true
		case MethodMannWhitney:
			kinds[TestMannWhitney] = true
		case MethodWelch:
			kinds[TestWelch] = true
		}
	}
	if len(kinds) == 1 {
		for k := range kinds {
			return k
		}
	}
	return def
}

// FamilyComparers keeps a Comparer per family across calls (a stop rule
// that compares after every round).
type FamilyComparers struct{ by map[string]*Comparer }

func (c *FamilyComparers) of(f string, opt Options) *Comparer {
	if c.by == nil {
		c.by = map[string]*Comparer{}
	}
	if c.by[f] == nil {
		c.by[f] = NewComparer(opt)
	}
	return c.by[f]
}

// FamiliesText says how the families were corrected, for a heading:
// "bh correction, alpha 0.05, within each family: time 44 tested, alloc 3
// tested".
func FamiliesText(r Report, sizes []FamilySize) string {
	var parts []string
	for _, s := range sizes {
		parts = append(parts, fmt.Sprintf("%s %d tested", s.Name, s.Tested))
	}
	return fmt.Sprintf("%s correction, alpha %g, within each family of tests (%s)", r.Correction, r.Alpha, strings.Join(parts, ", "))
}
