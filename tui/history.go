package tui

import (
	"fmt"
	"math"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
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
// the session (or bisect record) a key opens.
type HistoryAlert struct {
	Index     int
	Confirmed bool
	FirstBad  string
	Text      string // e.g. "confirmed: +2.1% [+1.6%, +2.6%]"
	Session   string
}

// HistoryView is the history screen: the series on the left (up/down),
// the selected one's chart with its change points (^) and alerts (!, ?
// when not confirmed) marked under the builds, the steps and alerts
// listed below; tab moves between the alerts, enter opens the selected
// alert's session (the view quits with Open set, for the caller to
// replay it), q quits.
type HistoryView struct {
	st     Styles
	series []HistorySeries
	sel    int
	alert  int
	width  int
	height int
	// Open is the session the user chose to open (enter on an alert);
	// "" when the view quit otherwise.
	Open string
}

// NewHistoryView shows series; sel selects one to start with.
func NewHistoryView(st Styles, series []HistorySeries, sel int) *HistoryView {
	return &HistoryView{st: st, series: series, sel: min(max(sel, 0), max(len(series)-1, 0)), width: 100, height: 30}
}

// Init does nothing: the data is all there.
func (v *HistoryView) Init() tea.Cmd { return nil }

// Update takes keys and sizes.
func (v *HistoryView) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		v.width, v.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
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
		case "enter", "o":
			if v.alerts() > 0 {
				if s := v.series[v.sel].Alerts[v.alert].Session; s != "" {
					v.Open = s
					return v, tea.Quit
				}
			}
		}
	}
	return v, nil
}

// Selected is the series selected when the view quit.
func (v *HistoryView) Selected() int { return v.sel }

func (v *HistoryView) alerts() int {
	if len(v.series) == 0 {
		return 0
	}
	return len(v.series[v.sel].Alerts)
}

// View draws the screen.
func (v *HistoryView) View() tea.View {
	return tea.NewView(v.Render())
}

// Render is the screen as text.
func (v *HistoryView) Render() string {
	if len(v.series) == 0 {
		return v.st.Title.Render("history") + "\n\nThe history has no series yet: perflab history import SESSION, or perflab watch.\n\nq quit"
	}
	var rows [][]string
	for _, s := range v.series {
		mark := ""
		if len(s.Alerts) > 0 {
			mark = "!"
		}
		rows = append(rows, []string{seriesName(s), mark})
	}
	left := pickerTable(&v.st, rows, v.sel, v.width/3, func(int, int) (lipgloss.Style, bool) { return lipgloss.Style{}, false })
	listW := lipgloss.Width(left)
	chart := v.chart(v.series[v.sel], max(v.width-listW-4, 30), max(v.height-10, 6))
	body := joinColumns(left, chart, listW+2)
	help := "↑/↓ series · tab next alert · enter open the alert's session · q quit"
	return v.st.Title.Render("history") + "\n\n" + body + "\n\n" + v.st.Muted.Render(help)
}

func seriesName(s HistorySeries) string {
	return s.Metric + " @ " + s.Device
}

// chart is the series' plot with the builds' marks under it, then its
// steps and alerts.
func (v *HistoryView) chart(s HistorySeries, w, h int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s) on %s, %d builds\n", s.Metric, s.Unit, s.Device, len(s.Values))
	vals := finite(s.Values)
	if len(vals) < 2 {
		b.WriteString("\n(fewer than 2 values: nothing to draw)\n")
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
		margin = strings.IndexAny(last, "┼┤") + 1
	}
	marks := []rune(strings.Repeat(" ", width))
	col := func(i int) int {
		if len(vals) <= 1 {
			return 0
		}
		return int(math.Round(float64(i) * float64(width-1) / float64(len(vals)-1)))
	}
	for _, st := range s.Steps {
		if st.Index >= 0 && st.Index < len(vals) {
			marks[col(st.Index)] = '^'
		}
	}
	for _, a := range s.Alerts {
		if a.Index >= 0 && a.Index < len(vals) {
			marks[col(a.Index)] = map[bool]rune{true: '!', false: '?'}[a.Confirmed]
		}
	}
	b.WriteString(strings.Repeat(" ", max(margin, 0)) + string(marks) + "\n")
	if len(s.Steps) == 0 {
		b.WriteString("no change point\n")
	}
	for _, st := range s.Steps {
		fmt.Fprintf(&b, "^ step at %s: %+.2f%% (p %.2g)\n", buildAt(s, st.Index), st.DeltaPct, st.P)
	}
	for i, a := range s.Alerts {
		mark := "  "
		if i == v.alert {
			mark = "> "
		}
		line := fmt.Sprintf("%s%s alert at %s: %s", mark, map[bool]string{true: "!", false: "?"}[a.Confirmed], buildAt(s, a.Index), a.Text)
		if a.FirstBad != "" {
			line += ", first bad " + a.FirstBad
		}
		if i == v.alert {
			line = v.st.Selected.Render(line)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
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
