// Package page renders a session's report for people who do not run
// perflab: one self-contained HTML page (perflab report --html, and the
// session page of perflab serve) and a GitHub-flavoured Markdown summary
// (perflab report --markdown, for a pull-request comment or
// $GITHUB_STEP_SUMMARY). Both put the changed metrics first, with their
// Δ, interval and verdict exactly as perflab report's table gives them:
// the verdicts come from the analysis handed in, nothing here decides.
package page

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/sessions"
)

// Input is what a page shows: the session, its comparisons (one, or one
// per build after the base) and what else perflab report says of it.
type Input struct {
	Session *sessions.Session
	Reports []analysis.Report
	// Lines are report's lines above its table (regimes, order effects).
	Lines []string
	// Plot is the session's figure as SVG (perflab report --plot), drawn
	// inline; nil leaves it out.
	Plot []byte
	// Where is the differential profile's table as text (perflab
	// profile), when the session has profiles; "" leaves it out.
	Where string
}

// Row is one metric of one comparison, as both formats list it.
type Row struct {
	Build     string // the build compared with the base (B, or its name)
	Metric    string
	Unit      string
	A, B      string // medians
	Delta     string
	CI        string
	P         string // the corrected p
	Verdict   string
	Changed   bool
	Warnings  []string
	sortClass int
}

// rows lists every metric of every report, the changed ones first
// (regressions, then improvements), then the undecided, then the rest,
// each group in the reports' order.
func rows(in Input) []Row {
	var out []Row
	for i, r := range in.Reports {
		build := ""
		if len(in.Reports) > 1 {
			build = label(r, i)
		}
		for _, m := range r.Metrics {
			d := m.Decision
			row := Row{Build: build, Metric: m.Name, Unit: m.Unit, A: num(float64(m.A.Median)), B: num(float64(m.B.Median)),
				Delta: format.SignedPct(d.DeltaPct), CI: "[" + format.SignedPct(d.CILowPct) + ", " + format.SignedPct(d.CIHighPct) + "]",
				P: pValue(m.PAdjusted), Verdict: m.Verdict, Warnings: m.Warnings}
			switch m.Verdict {
			case analysis.VerdictRegression:
				row.Changed, row.sortClass = true, 0
			case analysis.VerdictImprovement:
				row.Changed, row.sortClass = true, 1
			case analysis.VerdictInconclusive:
				row.sortClass = 2
			default:
				row.sortClass = 3
			}
			if !d.CILowPct.Defined() && !d.CIHighPct.Defined() {
				row.CI = "—"
			}
			out = append(out, row)
		}
	}
	slices.SortStableFunc(out, func(a, b Row) int { return cmp.Compare(a.sortClass, b.sortClass) })
	return out
}

// label names comparison i: its B label, else "build i+2".
func label(r analysis.Report, i int) string {
	if len(r.Inputs) >= 2 {
		return r.Inputs[1]
	}
	return fmt.Sprintf("build %d", i+2)
}

func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf("%.4g", x)
}

func pValue(p analysis.Float) string {
	switch {
	case !p.Defined():
		return "—"
	case p < 0.0001:
		return "<0.0001"
	}
	return fmt.Sprintf("%.2g", float64(p))
}

// Summary is the page's one-line answer: how many metrics changed, and
// which way.
func Summary(in Input) string {
	rs := rows(in)
	var reg, imp []string
	for _, r := range rs {
		name := r.Metric
		if r.Build != "" {
			name = r.Build + " " + name
		}
		switch r.Verdict {
		case analysis.VerdictRegression:
			reg = append(reg, name+" "+r.Delta)
		case analysis.VerdictImprovement:
			imp = append(imp, name+" "+r.Delta)
		}
	}
	s := fmt.Sprintf("%d of %d %s changed", len(reg)+len(imp), len(rs), plural(len(rs), "metric"))
	if len(reg) > 0 {
		s += fmt.Sprintf("; %d %s: %s", len(reg), plural(len(reg), "regression"), strings.Join(reg, ", "))
	}
	if len(imp) > 0 {
		s += fmt.Sprintf("; %d %s: %s", len(imp), plural(len(imp), "improvement"), strings.Join(imp, ", "))
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// header is the session's identity in one line: id, device, builds, the
// trials counted and how the run ended.
func header(in Input) string {
	sum := in.Session.Summary()
	var builds []string
	for _, arm := range sum.Plan.ArmKeys() {
		builds = append(builds, sum.Plan.ArmLabel(arm))
	}
	parts := []string{"session " + sum.ID, "device " + sum.Device.ID, strings.Join(builds, " vs ")}
	n := 0
	for _, c := range sum.Counts.Counted {
		n = max(n, c)
	}
	parts = append(parts, fmt.Sprintf("%d counted trials per build", n))
	switch {
	case sum.End == nil:
		parts = append(parts, "did not finish")
	case sum.End.Reason != "completed":
		parts = append(parts, "ended: "+sum.End.Reason)
	case sum.End.Stop != "":
		parts = append(parts, "stopped: "+sum.End.Stop)
	}
	return strings.Join(parts, " · ")
}

// warnings gathers the reports' warnings and the metrics', each once.
func warnings(in Input) []string {
	var out []string
	seen := map[string]bool{}
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, r := range in.Reports {
		for _, w := range r.Warnings {
			add(w)
		}
		for _, m := range r.Metrics {
			for _, w := range m.Warnings {
				add(m.Name + ": " + w)
			}
		}
	}
	return out
}

// family says how the verdicts were corrected and at what level, as the
// table's heading does.
func family(in Input) string {
	if len(in.Reports) == 0 {
		return ""
	}
	return analysis.FamilyText(in.Reports[0])
}

// Markdown writes the GitHub-flavoured summary: a heading with the
// answer, the session line, the table (changed first) and the warnings
// folded in a <details>.
func Markdown(w io.Writer, in Input) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "### perflab: %s\n\n", format.MarkdownCell(Summary(in)))
	fmt.Fprintf(&b, "%s  \n%s\n\n", format.MarkdownCell(header(in)), format.MarkdownCell(family(in)))
	rs := rows(in)
	multi := len(in.Reports) > 1
	if multi {
		b.WriteString("| build | metric | A | B | Δ | CI | p adj | verdict |\n|---|---|---:|---:|---:|---|---:|---|\n")
	} else {
		b.WriteString("| metric | A | B | Δ | CI | p adj | verdict |\n|---|---:|---:|---:|---|---:|---|\n")
	}
	for _, r := range rs {
		cells := []string{r.Metric + unitSuffix(r.Unit), r.A, r.B, r.Delta, r.CI, r.P, r.Verdict}
		if multi {
			cells = append([]string{r.Build}, cells...)
		}
		for i := range cells {
			cells[i] = format.MarkdownCell(cells[i])
		}
		if r.Changed {
			cells[len(cells)-1] = "**" + cells[len(cells)-1] + "**"
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	if ws := warnings(in); len(ws) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>%d %s</summary>\n\n", len(ws), plural(len(ws), "warning"))
		for _, l := range ws {
			b.WriteString("- " + format.MarkdownCell(l) + "\n")
		}
		b.WriteString("\n</details>\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

// HTML writes the self-contained page: no script, no file beside it, the
// plot inline.
func HTML(w io.Writer, in Input) error {
	data := struct {
		Title, Summary, Header, Family string
		Lines, Warnings                []string
		Rows                           []Row
		Multi                          bool
		Plot                           template.HTML
		Where                          string
		Notes                          []string
		Problems                       []string
	}{
		Title: "perflab · session " + in.Session.Header.ID, Summary: Summary(in), Header: header(in), Family: family(in),
		Lines: in.Lines, Warnings: warnings(in), Rows: rows(in), Multi: len(in.Reports) > 1, Where: in.Where,
	}
	if len(in.Plot) > 0 {
		data.Plot = template.HTML(svgOnly(in.Plot)) // perflab's own figure, drawn by gonum/plot
	}
	sum := in.Session.Summary()
	data.Notes = sum.Notes
	for _, p := range sum.Problems {
		data.Problems = append(data.Problems, p.String())
	}
	return pageTemplate.Execute(w, data)
}

// svgOnly is the <svg> element of an SVG document (without its XML
// declaration, which HTML does not take).
func svgOnly(doc []byte) string {
	s := string(doc)
	if i := strings.Index(s, "<svg"); i >= 0 {
		return s[i:]
	}
	return ""
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"verdictClass": func(v string) string { return strings.ReplaceAll(v, " ", "-") },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em; padding: 0 1em; color: #1b1b1b; }
h1 { font-size: 1.3em; margin: 0 0 .3em; }
.summary { font-size: 1.1em; margin: .2em 0 .8em; }
.muted { color: #666; }
table { border-collapse: collapse; margin: .8em 0; }
th, td { padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.regression { color: #b00020; font-weight: 600; }
.improvement { color: #0a7a2f; font-weight: 600; }
.no-change { color: #555; }
.inconclusive { color: #8a6d00; }
pre { background: #f6f6f6; padding: .7em; overflow-x: auto; }
svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="summary">{{.Summary}}</p>
<p class="muted">{{.Header}}<br>{{.Family}}</p>
{{range .Lines}}<p class="muted">{{.}}</p>
{{end}}<table>
<thead><tr>{{if .Multi}}<th>build</th>{{end}}<th>metric</th><th>A median</th><th>B median</th><th>Δ</th><th>interval</th><th>p adj</th><th>verdict</th></tr></thead>
<tbody>
{{range .Rows}}<tr>{{if $.Multi}}<td>{{.Build}}</td>{{end}}<td>{{.Metric}}{{if .Unit}} <span class="muted">({{.Unit}})</span>{{end}}</td><td class="num">{{.A}}</td><td class="num">{{.B}}</td><td class="num">{{.Delta}}</td><td class="num">{{.CI}}</td><td class="num">{{.P}}</td><td class="{{verdictClass .Verdict}}">{{.Verdict}}</td></tr>
{{end}}</tbody>
</table>
{{if .Warnings}}<h2>Warnings</h2>
<ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{if .Plot}}<h2>Trials and intervals</h2>
{{.Plot}}
{{end}}{{if .Where}}<h2>Where the time went</h2>
<pre>{{.Where}}</pre>
{{end}}{{if .Notes}}<h2>Notes</h2>
<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{if .Problems}}<h2>Lines skipped</h2>
<ul>{{range .Problems}}<li>{{.}}</li>{{end}}</ul>
{{end}}<p class="muted">perflab report · {{.Header}}</p>
</body>
</html>
`))
