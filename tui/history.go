package tui

import (
	"fmt"
	"math"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/guptarohit/asciigraph"
)

// HistorySeries is one series of the results history (perflab history
// view): a metric on a device over builds in order, its detected steps
// and its alerts.
type HistorySeries struct {
	Device, Metric, Unit string
	// Builds name the points (a short commit, or a build name), Values
	// their medians, Sessions the session each came from.
	Builds   []string
	Values   []float64
	Sessions []string
	// Steps are the change points found (the index of each new level's
	// first build) with their change in percent.
	Steps []HistoryStep
	// Alerts are the steps a confirmation run looked at.
	Alerts []HistoryAlert
}

// HistoryStep is a change point of a series.
type HistoryStep struct {
	Index    int
	DeltaPct float64
	P        float64
}

// HistoryAlert is an alert on a series: where, whether confirmed, and
// what keys open: its confirmation session (enter) and its bisect record
// (b).
type HistoryAlert struct {
	ID        int // the history's alert id: the newest is the largest
	Index     int
	Confirmed bool
	FirstBad  string
	Text      string // e.g. "alert 1 confirmed regression: +2.1% [+1.6%, +2.6%]"
	Session   string // the confirmation's session ("" none)
	Bisect    string // the bisect record ("" none)
}

// HistoryView is the history screen: the series listed on top (up/down;
// ! marks those with alerts), the selected one's chart below at full
// width with its change points (^) and alerts (!, ? when not confirmed)
// marked under the builds and the builds' commits on the axis, the steps
// and alerts listed below it; tab moves between the alerts, enter opens
// the selected alert's confirmation session and b its bisect (the view
// quits with Open set, for the caller to open it in the workbench's
// screens and come back), q quits.
type HistoryView struct {
	st     Styles
	series []HistorySeries
	sel    int
	alert  int
	width  int
	height int
	status string
	// Open is what the user chose to open: the alert's session (enter)
	// or bisect record (b); "" when the view quit otherwise.
	Open string
}

// NewHistoryView shows series; sel selects one to start with, or, when
// negative, the series of the newest alert (else the first).
func NewHistoryView(st Styles, series []HistorySeries, sel int) *HistoryView {
	v := &HistoryView{st: st, series: series, width: 80, height: 24}
	if sel < 0 {
		sel = 0
		newest := 0
		for i, s := range series {
			for _, a := range s.Alerts {
				if a.ID > newest {
					newest, sel = a.ID, i
				}
			}
		}
		// The newest alert is the one selected on its series.
		for k, a := range v.alertsOf(sel) {
			if a.ID == newest {
				v.alert = k
			}
		}
	}
	v.sel = min(max(sel, 0), max(len(series)-1, 0))
	return v
}

func (v *HistoryView) alertsOf(i int) []HistoryAlert {
	if i < 0 || i >= len(v.series) {
		return nil
	}
	return v.series[i].Alerts
}

// Init does nothing: the data is all there.
func (v *HistoryView) Init() tea.Cmd { return nil }

// Update takes keys and sizes.
func (v *HistoryView) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		v.width, v.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		v.status = ""
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return v, tea.Quit
		case "up", "k":
			if v.sel > 0 {
				v.sel, v.alert = v.sel-1, 0
			}
		case "down", "j":
			if v.sel < len(v.series)-1 {
				v.sel, v.alert = v.sel+1, 0
			}
		case "tab":
			if n := v.alerts(); n > 0 {
				v.alert = (v.alert + 1) % n
			}
		case "enter", "o", "b":
			if v.alerts() == 0 {
				v.status = "this series has no alert to open"
				return v, nil
			}
			a := v.series[v.sel].Alerts[v.alert]
			open, what := a.Session, "confirmation session"
			if msg.String() == "b" {
				open, what = a.Bisect, "bisect"
			}
			if open == "" {
				v.status = "this alert has no " + what
				return v, nil
			}
			v.Open = open
			return v, tea.Quit
		}
	}
	return v, nil
}

// Selected is the series selected when the view quit.
func (v *HistoryView) Selected() int { return v.sel }

// SelectedAlert is the alert selected on it.
func (v *HistoryView) SelectedAlert() int { return v.alert }

// SelectAlert selects alert k of the selected series (coming back from
// an opened alert).
func (v *HistoryView) SelectAlert(k int) {
	if k >= 0 && k < v.alerts() {
		v.alert = k
	}
}

func (v *HistoryView) alerts() int { return len(v.alertsOf(v.sel)) }

// View draws the screen.
func (v *HistoryView) View() tea.View {
	return tea.NewView(v.Render())
}

// historyListRows is the most series listed at once; the list scrolls.
const historyListRows = 4

// Render is the screen as text: the title, the series list, the chart
// and its text, the help, fitted to the window.
func (v *HistoryView) Render() string {
	if len(v.series) == 0 {
		return v.st.Title.Render("history") + "\n\nThe history has no series yet: perflab history import SESSION, or perflab watch.\n\nq quit"
	}
	w := max(v.width, 40)
	var b strings.Builder
	alerts := 0
	for _, s := range v.series {
		alerts += len(s.Alerts)
	}
	b.WriteString(v.st.Title.Render("history") + v.st.Muted.Render(fmt.Sprintf(" · %d series, %d %s", len(v.series), alerts, plural(alerts, "alert", "alerts"))) + "\n")
	first := min(max(v.sel-historyListRows/2, 0), max(len(v.series)-historyListRows, 0))
	for i := first; i < min(first+historyListRows, len(v.series)); i++ {
		s := v.series[i]
		mark, cur := " ", "  "
		if len(s.Alerts) > 0 {
			mark = "!"
		}
		if i == v.sel {
			cur = "▸ "
		}
		line := truncate(fmt.Sprintf("%s%s %s · %s · %d builds", cur, mark, seriesName(s), s.Device, len(s.Values)), w)
		if i == v.sel {
			line = v.st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	if len(v.series) > historyListRows {
		b.WriteString(v.st.Muted.Render(fmt.Sprintf("  (%d of %d series; ↑/↓ for more)", v.sel+1, len(v.series))) + "\n")
	}
	text := v.chartText(v.series[v.sel], w)
	help := "↑/↓ series · tab next alert · enter its session · b its bisect · q quit"
	if v.status != "" {
		help = v.status
	}
	used := strings.Count(b.String(), "\n") + 1 + len(text) + 1 + 3 // header, text, help; axis, marks, labels
	plotH := max(v.height-used-1, 3)
	b.WriteString("\n" + v.chart(v.series[v.sel], w, plotH))
	for _, l := range text {
		b.WriteString(l + "\n")
	}
	b.WriteString(v.st.Muted.Render(truncate(help, w)))
	return b.String()
}

// seriesName is the series' metric with its unit.
func seriesName(s HistorySeries) string {
	if s.Unit == "" {
		return s.Metric
	}
	return s.Metric + " (" + s.Unit + ")"
}

// chart is the series' plot, at most w wide and h high, with the builds'
// marks under it and, under those, the builds' commits at the first, the
// marked and the last build, as many as fit.
func (v *HistoryView) chart(s HistorySeries, w, h int) string {
	var b strings.Builder
	vals := finite(s.Values)
	if len(vals) < 2 {
		b.WriteString("(fewer than 2 values: nothing to draw)\n")
		return b.String()
	}
	// One column a build: the plot is as wide as the series, at most w.
	width := min(len(vals), max(w-12, 10))
	plot := asciigraph.Plot(vals, asciigraph.Height(h), asciigraph.Width(width), asciigraph.Precision(2))
	b.WriteString(plot + "\n")
	// The marks line up with the plot's columns: the plot's axis takes
	// the left margin of its last line.
	lines := strings.Split(plot, "\n")
	margin := 0
	if last := lines[len(lines)-1]; last != "" {
		margin = lipgloss.Width(last[:strings.IndexAny(last, "┼┤")]) + 1
	}
	marks := []rune(strings.Repeat(" ", width))
	col := func(i int) int {
		return int(math.Round(float64(i) * float64(width-1) / float64(len(vals)-1)))
	}
	var at []int // builds whose commit is labelled
	for _, st := range s.Steps {
		if st.Index >= 0 && st.Index < len(vals) {
			marks[col(st.Index)] = '^'
			at = append(at, st.Index)
		}
	}
	for _, a := range s.Alerts {
		if a.Index >= 0 && a.Index < len(vals) {
			marks[col(a.Index)] = map[bool]rune{true: '!', false: '?'}[a.Confirmed]
			at = append(at, a.Index)
		}
	}
	pad := strings.Repeat(" ", max(margin, 0))
	b.WriteString(pad + string(marks) + "\n")
	b.WriteString(pad + axisLabels(s.Builds, append([]int{0, len(vals) - 1}, at...), col, width+max(w-margin-width, 0)) + "\n")
	return b.String()
}

// axisLabels writes the names of the builds at (in that order of
// preference: the first, the last, then the marked ones) under their
// columns, each starting at its column (or ending there, past the
// width), leaving out those that would overlap one already placed.
func axisLabels(builds []string, at []int, col func(int) int, width int) string {
	line := []rune(strings.Repeat(" ", width))
	taken := make([]bool, width)
	for _, i := range at {
		if i < 0 || i >= len(builds) {
			continue
		}
		name := []rune(builds[i])
		start := col(i)
		if start+len(name) > width {
			start = max(col(i)-len(name)+1, 0)
		}
		end := min(start+len(name), width)
		free := true
		for c := max(start-1, 0); c < min(end+1, width); c++ {
			free = free && !taken[c]
		}
		if !free {
			continue
		}
		for c := start; c < end; c++ {
			line[c], taken[c] = name[c-start], true
		}
	}
	return strings.TrimRight(string(line), " ")
}

// chartText is the lines under the chart: its steps and its alerts,
// wrapped to w, the selected alert marked.
func (v *HistoryView) chartText(s HistorySeries, w int) []string {
	var out []string
	if len(s.Steps) == 0 {
		out = append(out, "no change point")
	}
	for _, st := range s.Steps {
		out = append(out, wrapLines(fmt.Sprintf("^ step at %s: %+.2f%% (p %.2g)", buildAt(s, st.Index), st.DeltaPct, st.P), w)...)
	}
	for i, a := range s.Alerts {
		mark := "  "
		if i == v.alert {
			mark = "> "
		}
		line := fmt.Sprintf("%s%s %s at %s", mark, map[bool]string{true: "!", false: "?"}[a.Confirmed], a.Text, buildAt(s, a.Index))
		if a.FirstBad != "" {
			line += ", first bad " + a.FirstBad
		}
		for _, l := range wrapLines(line, w) {
			if i == v.alert {
				l = v.st.Selected.Render(l)
			}
			out = append(out, l)
		}
	}
	return out
}

// wrapLines wraps s to w columns, the continuation lines indented.
func wrapLines(s string, w int) []string {
	return strings.Split(ansi.Wrap(s, w, " "), "\n")
}

func buildAt(s HistorySeries, i int) string {
	if i >= 0 && i < len(s.Builds) {
		return fmt.Sprintf("%s (#%d)", s.Builds[i], i)
	}
	return fmt.Sprintf("#%d", i)
}

// finite replaces undefined values by their predecessor (the plot has
// no gaps), the first by the first defined one.
func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	last := math.NaN()
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			x = last
		}
		out = append(out, x)
		last = x
	}
	for i := range out {
		if !math.IsNaN(out[i]) {
			for j := 0; j < i; j++ {
				out[j] = out[i]
			}
			return out
		}
	}
	return nil
}

// joinColumns sets b beside a, a padded to width columns.
func joinColumns(a, b string, width int) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	n := max(len(al), len(bl))
	var out []string
	for i := range n {
		var l, r string
		if i < len(al) {
			l = al[i]
		}
		if i < len(bl) {
			r = bl[i]
		}
		pad := width - lipgloss.Width(l)
		out = append(out, l+strings.Repeat(" ", max(pad, 1))+r)
	}
	return strings.Join(out, "\n")
}
