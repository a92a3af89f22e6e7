package analysis

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// SuiteTable is the text of a suite's report (CompareFamilies' report and
// families) for a person: one line saying which benchmarks changed, the
// rounds they took, then the changed rows, then the rest, and the notes
// and warnings grouped by kind with their counts. note, when not empty,
// is said once under the summary (e.g. the GOMAXPROCS suffix dropped from
// every name).
func SuiteTable(r Report, sizes []FamilySize, note string) string {
	summary, body := SuiteTableParts(r, sizes, note)
	return summary + "\n" + body
}

// SuiteTableParts is SuiteTable in two: the summary lines (with note),
// which a session's report prints first, and the rest.
func SuiteTableParts(r Report, sizes []FamilySize, note string) (summary, body string) {
	return SuiteTableFit(r, sizes, note, 0)
}

// SuiteTableFit is SuiteTableParts with its tables fitted to width columns
// (0: no limit). A table wider than that keeps the metric, Δ, interval,
// corrected p, pairs and verdict (suiteFit), and only the prose is left to
// wrap.
func SuiteTableFit(r Report, sizes []FamilySize, note string, width int) (summary, body string) {
	summary = suiteSummary(r, sizes)
	if note != "" {
		summary += note + "\n"
	}
	var sb strings.Builder
	h := tableHeading(r)
	h = strings.Replace(h, FamilyText(r), FamiliesText(r, sizes), 1)
	sb.WriteString(h)
	sb.WriteString("\n")
	cols := tableColumnsFor(r)
	var changed, rest [][]string
	for _, m := range r.Metrics {
		row := cols.row(r, m)
		if m.Verdict == VerdictRegression || m.Verdict == VerdictImprovement {
			changed = append(changed, row)
		} else {
			rest = append(rest, row)
		}
	}
	for _, g := range r.Geomeans {
		if !g.Medians[0].Defined() || !g.Medians[1].Defined() {
			continue
		}
		sc := cellScaleFor(g.Unit, float64(g.Medians[0]))
		row := make([]string, len(cols.head))
		row[0], row[1], row[2], row[3], row[4] = "geomean", g.Unit, sc.format(g.Medians[0]), sc.format(g.Medians[1]), fmtPct(g.Delta[0])
		rest = append(rest, row)
	}
	fit := suiteFit{cols: cols, width: width, untested: map[string]int{}}
	if len(changed) > 0 {
		sb.WriteString("\nchanged:\n")
		fit.write(&sb, changed)
	}
	if len(rest) > 0 {
		if len(changed) > 0 {
			sb.WriteString("\nthe rest:\n")
		} else {
			sb.WriteString("\n")
		}
		fit.write(&sb, rest)
	}
	sb.WriteString(fit.reasons())
	sb.WriteString(poolTable(r))
	writeGrouped(&sb, r)
	return summary, sb.String()
}

// suiteFit writes a suite's tables whole, or, when wider than width,
// with only the metric, Δ, interval, corrected p, pairs and verdict
// columns, names cut in the middle (package and metric stay), and a
// "not tested (why)" verdict as "not tested", its reasons counted once
// under the tables (reasons).
type suiteFit struct {
	cols     tableColumns
	width    int
	narrowed bool
	untested map[string]int
}

// write writes the table of rows under the columns' heading.
func (f *suiteFit) write(sb *strings.Builder, rows [][]string) {
	all := append([][]string{f.cols.head}, rows...)
	var whole strings.Builder
	WriteAligned(&whole, all, f.cols.right)
	if f.width <= 0 || WidestLine(whole.String()) <= f.width {
		sb.WriteString(whole.String())
		return
	}
	f.narrowed = true
	var keep []int
	var right []bool
	for i, h := range f.cols.head {
		if i == 0 || i >= 4 && h != "p" && h != "n A/B" && h != "p all" {
			keep, right = append(keep, i), append(right, f.cols.right[i])
		}
	}
	verdict := len(f.cols.head) - 1
	if f.cols.multi {
		verdict--
	}
	short := make([][]string, len(all))
	for i, row := range all {
		short[i] = slices.Clone(row)
		if row[0] == "geomean" {
			short[i][0] = "geomean " + row[1]
		}
		if why, ok := strings.CutPrefix(row[verdict], VerdictNotTested+" ("); ok && i > 0 {
			f.untested[strings.TrimSuffix(why, ")")]++
			short[i][verdict] = VerdictNotTested
		}
	}
	WriteAligned(sb, FitColumns(short, keep, f.width, false), right)
}

// reasons is the line under narrowed tables that says why the rows said
// "not tested" were not, with their counts.
func (f *suiteFit) reasons() string {
	if !f.narrowed || len(f.untested) == 0 {
		return ""
	}
	var parts []string
	for why, n := range f.untested {
		parts = append(parts, fmt.Sprintf("%s (%d)", why, n))
	}
	slices.Sort(parts)
	return fmt.Sprintf("not tested: %s (--wide shows each row's reason, units and medians)\n", strings.Join(parts, "; "))
}

// WidestLine is the width in runes of the widest line of s: whether a
// table fits a terminal.
func WidestLine(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, utf8.RuneCountInString(l))
	}
	return n
}

// suiteFamily tallies one family's metrics for the summary.
type suiteFamily struct {
	n                 int
	slower, faster    []string
	noChange, undecid int
	untested          int
	// below are the inconclusive metrics whose change is significant but
	// whose estimate is below the threshold (Decision.BelowThreshold): a
	// change, of a size the interval cannot place on either side of it.
	below []string
	thr   float64
}

// suiteFamilyOf names the family a suite metric is summarized in.
func suiteFamilyOf(m MetricResult) string {
	switch {
	case m.Unit == "ns/op" || m.Unit == "sec/op" || m.Unit == "est-cycles/op":
		return "time"
	case m.Unit == "B/op" || m.Unit == "allocs/op":
		return "alloc"
	}
	return "other"
}

// add counts m under its verdict.
func (x *suiteFamily) add(m MetricResult) {
	x.n++
	label := fmt.Sprintf("%s %s", m.Name, fmtPct(m.Decision.DeltaPct))
	switch {
	case !m.PAdjusted.Defined():
		x.untested++
	case m.Verdict == VerdictRegression:
		x.slower = append(x.slower, label)
	case m.Verdict == VerdictImprovement:
		x.faster = append(x.faster, label)
	case m.Verdict == VerdictNoChange:
		x.noChange++
	default:
		x.undecid++
		if m.Decision.BelowThreshold {
			x.below = append(x.below, label)
		}
	}
}

// line is the family's summary line: "2 of 44 benchmarks changed: 1
// slower (…), 1 faster (…); 40 no change, 2 inconclusive"; w names its
// metrics and their two directions.
func (x *suiteFamily) line(w [3]string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d of %d %s changed", len(x.slower)+len(x.faster), x.n, w[0])
	var parts []string
	if len(x.slower) > 0 {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(x.slower), w[1], strings.Join(x.slower, ", ")))
	}
	if len(x.faster) > 0 {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(x.faster), w[2], strings.Join(x.faster, ", ")))
	}
	if len(parts) > 0 {
		sb.WriteString(": " + strings.Join(parts, ", "))
	}
	var rest []string
	for _, c := range []struct {
		n    int
		what string
	}{{x.noChange, "no change"}, {x.undecid, "inconclusive"}, {x.untested, "not tested"}} {
		if c.n > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", c.n, c.what))
		}
		if c.what == "inconclusive" && len(x.below) > 0 {
			rest[len(rest)-1] += fmt.Sprintf(" (%d of them significant, with an estimate below the ±%g%% threshold: %s)", len(x.below), x.thr, strings.Join(x.below, ", "))
		}
	}
	if len(rest) > 0 {
		sb.WriteString("; " + strings.Join(rest, ", "))
	}
	return sb.String() + "\n"
}

// suiteSummary is the report's first lines: "2 of 44 benchmarks changed:
// 1 slower (decimal.X +12.3%), 1 faster (...); 40 no change, 2
// inconclusive", the same of every other family with a change, and the
// rounds the benchmarks took.
func suiteSummary(r Report, sizes []FamilySize) string {
	var sb strings.Builder
	by := map[string]*suiteFamily{}
	var rounds []int
	var mdes []float64
	for _, m := range r.Metrics {
		f := suiteFamilyOf(m)
		if strings.HasPrefix(m.Verdict, VerdictNotTested) && f != "time" {
			continue
		}
		if by[f] == nil {
			by[f] = &suiteFamily{thr: r.ThresholdPct}
		}
		by[f].add(m)
		if f == "time" {
			rounds = append(rounds, m.Decision.N)
			if m.Decision.MDEPct.Defined() {
				mdes = append(mdes, float64(m.Decision.MDEPct))
			}
		}
	}
	words := map[string][3]string{"time": {"benchmarks", "slower", "faster"}, "alloc": {"allocation metrics", "more", "fewer"},
		"other": {"other metrics", "regressed", "improved"}}
	for _, f := range []string{"time", "alloc", "other"} {
		if x := by[f]; x != nil && (f == "time" || len(x.slower)+len(x.faster) > 0) {
			sb.WriteString(x.line(words[f]))
		}
	}
	sb.WriteString(roundsLines(r, sizes, rounds, mdes))
	return sb.String()
}

// roundsLines says how many rounds the benchmarks took, the smallest
// change detectable at the measured noise, and warns when the rounds are
// too few for the time family to report anything.
func roundsLines(r Report, sizes []FamilySize, rounds []int, mdes []float64) string {
	var sb strings.Builder
	if len(rounds) > 0 {
		slices.Sort(rounds)
		lo, hi, med := rounds[0], rounds[len(rounds)-1], rounds[len(rounds)/2]
		if lo == hi {
			fmt.Fprintf(&sb, "rounds: %d of each benchmark\n", lo)
		} else {
			fmt.Fprintf(&sb, "rounds per benchmark: %d to %d (median %d; the pairs column gives each)\n", lo, hi, med)
		}
	}
	if len(mdes) > 0 {
		slices.Sort(mdes)
		fmt.Fprintf(&sb, "smallest change detectable at the measured noise (MDE, 80%% power): median %.1f%% of the benchmarks' (%.1f%% to %.1f%%)\n",
			mdes[len(mdes)/2], mdes[0], mdes[len(mdes)-1])
	}
	for _, s := range sizes {
		if s.Name == "time" && s.Tested > 0 && len(rounds) > 0 {
			if need := SignedRankMinPairs(r.Alpha / float64(s.Tested)); rounds[len(rounds)-1] < need && !strings.Contains(r.PrimaryTest, "sequential") {
				fmt.Fprintf(&sb, "warning: %d rounds cannot report any of %d tested benchmarks (the signed-rank floor 2/2ⁿ needs n ≥ %d against %g/%d): run more rounds\n",
					rounds[len(rounds)-1], s.Tested, need, r.Alpha, s.Tested)
			}
		}
	}
	return sb.String()
}

// kindRE finds the numbers of a note or warning, so that notes of one
// kind group together.
var kindRE = regexp.MustCompile(`[-+]?[0-9][0-9.,]*(e[-+]?[0-9]+)?%?|µs|ns|ms`)

// writeGrouped writes the notes and warnings of r grouped by kind (the
// text with its numbers taken out): one line of a kind found once, else
// its first instance with how many metrics have it and which.
func writeGrouped(sb *strings.Builder, r Report) {
	type group struct {
		first string
		ids   []string
	}
	collect := func(items [][2]string) []string {
		var order []string
		by := map[string]*group{}
		for _, it := range items {
			k := kindRE.ReplaceAllString(it[1], "#")
			if by[k] == nil {
				by[k] = &group{first: it[1]}
				order = append(order, k)
			}
			by[k].ids = append(by[k].ids, it[0])
		}
		var out []string
		for _, k := range order {
			g := by[k]
			switch {
			case len(g.ids) == 1 && g.ids[0] == "":
				out = append(out, "  "+g.first)
			case len(g.ids) == 1:
				out = append(out, fmt.Sprintf("  %s: %s", g.ids[0], g.first))
			default:
				ids := g.ids
				more := ""
				if len(ids) > 4 {
					ids, more = ids[:4], ", …"
				}
				out = append(out, fmt.Sprintf("  %d metrics (%s%s), e.g. %s: %s", len(g.ids), strings.Join(ids, ", "), more, g.ids[0], g.first))
			}
		}
		return out
	}
	var notes, warns [][2]string
	for _, m := range r.Metrics {
		id := m.Name
		if m.Unit != "" {
			id += " " + m.Unit
		}
		if n := decisionNote(m, r.ThresholdPct); n != "" {
			notes = append(notes, [2]string{id, n})
		}
		for _, w := range m.Warnings {
			warns = append(warns, [2]string{id, w})
		}
	}
	for _, w := range r.Warnings {
		warns = append(warns, [2]string{"", w})
	}
	if ns := collect(notes); len(ns) > 0 {
		sb.WriteString("\nnotes:\n" + strings.Join(ns, "\n") + "\n")
	}
	if ws := collect(warns); len(ws) > 0 {
		sb.WriteString("\nwarnings:\n" + strings.Join(ws, "\n") + "\n")
	}
}
