package tui

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/profdiff"
)

// The "where" view of a dashboard: the session's differential profile
// (perflab profile), live as trials arrive and in replay up to its
// position: the functions that changed most with their Δ% and interval as
// bars on a shared axis, the verdict words of every other panel, the
// selected function's callers and callees, a phase filter and self or
// cumulative time. It needs a session with profiles ("profile": true).

// whereComputedMsg carries a differential profile of the trials up to
// version.
type whereComputedMsg struct {
	stream  int
	version int
	report  *profdiff.Report
	err     error
}

func (m whereComputedMsg) streamID() int { return m.stream }

// whereKeys are the keys of the where view.
type whereKeys struct {
	Toggle, Phase, Cum, Up, Down key.Binding
}

func newWhereKeys() whereKeys {
	return whereKeys{
		Toggle: key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "where (profiles)")),
		Phase:  key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "phase")),
		Cum:    key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "self/cumulative")),
		Up:     key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/↓", "function")),
		Down:   key.NewBinding(key.WithKeys("down", "j")),
	}
}

// wherePane is the where view's state.
type wherePane struct {
	keys      whereKeys
	enabled   bool // the session has profiles
	open      bool
	path      string // the session file
	replay    bool   // analyse only the trials shown so far
	phase     string
	phases    []string
	cum       bool
	sel       int
	computing bool
	ver       int // the state version of the report shown (−1: none)
	wantVer   int
	report    *profdiff.Report
	err       error
}

func newWherePane(plan lab.Experiment) wherePane {
	return wherePane{keys: newWhereKeys(), enabled: plan.Profile, ver: -1}
}

// whereKey handles the where view's keys; false lets the dashboard's own
// keys act.
func (f *feed) whereKey(msg tea.KeyPressMsg) (bool, tea.Cmd) {
	w := &f.where
	if !w.enabled {
		return false, nil
	}
	switch {
	case key.Matches(msg, w.keys.Toggle):
		w.open = !w.open
		return true, f.whereRefresh()
	case !w.open:
		return false, nil
	case msg.String() == "esc":
		w.open = false
	case key.Matches(msg, w.keys.Phase):
		all := append([]string{""}, w.phases...)
		i := slices.Index(all, w.phase)
		w.phase, w.sel, w.ver = all[(i+1)%len(all)], 0, -1
		return true, f.whereRefresh()
	case key.Matches(msg, w.keys.Cum):
		w.cum, w.sel, w.ver = !w.cum, 0, -1
		return true, f.whereRefresh()
	case key.Matches(msg, w.keys.Up):
		w.sel = max(0, w.sel-1)
	case key.Matches(msg, w.keys.Down):
		w.sel++
	default:
		return false, nil
	}
	return true, nil
}

// whereRefresh starts a differential profile when the view is open, the
// trials changed since the last and none is running.
func (f *feed) whereRefresh() tea.Cmd {
	w := &f.where
	ver := f.state.Version()
	if !w.open || w.computing || w.path == "" || ver == w.ver {
		return nil
	}
	w.computing, w.wantVer = true, ver
	opt := profdiff.Options{Phase: w.phase, Cumulative: w.cum}
	if w.replay {
		// The trials shown so far; none yet is no answer yet (MaxIndex 0
		// would be every trial: the final answer at position 0).
		for _, e := range f.state.eventsSoFar() {
			if e.Type == lab.EventTrial && e.Trial != nil {
				opt.MaxIndex = e.Trial.Index + 1
			}
		}
		if opt.MaxIndex == 0 {
			w.computing = false
			w.ver, w.report, w.err = ver, nil, errors.New("no trial yet at this point of the replay")
			return nil
		}
	}
	path, stream := w.path, f.stream
	return func() tea.Msg {
		r, err := profdiff.Analyze(path, opt)
		return whereComputedMsg{stream: stream, version: ver, report: r, err: err}
	}
}

// whereComputed takes a differential profile; another follows when trials
// arrived meanwhile.
func (f *feed) whereComputed(msg whereComputedMsg) tea.Cmd {
	w := &f.where
	w.computing = false
	w.ver, w.report, w.err = msg.version, msg.report, msg.err
	if msg.report != nil && len(msg.report.Phases) > 0 {
		w.phases = msg.report.Phases
	}
	return f.whereRefresh()
}

// whereHelp is the where view's keys for the help bar.
func (w *wherePane) help() []key.Binding {
	if !w.enabled {
		return nil
	}
	if !w.open {
		return []key.Binding{w.keys.Toggle}
	}
	closeKey := key.NewBinding(key.WithKeys("w"), key.WithHelp("w/esc", "close"))
	return []key.Binding{w.keys.Up, w.keys.Phase, w.keys.Cum, closeKey}
}

// whereView draws the where view into w × h cells: its heading, the
// table of tested functions, the selected function and the total.
func (f *feed) whereView(wd, h int) string {
	w, st := &f.where, f.st
	r := w.report
	lines := f.whereHeading(wd)
	switch {
	case w.err != nil && r == nil:
		return strings.Join(append(lines, st.Muted.Render(truncate("  "+w.err.Error(), wd))), "\n")
	case r == nil:
		return strings.Join(append(lines, st.Muted.Render("  computing…")), "\n")
	}
	var tested []profdiff.Function
	for _, fn := range r.Functions {
		if fn.Tested {
			tested = append(tested, fn)
		}
	}
	// Under the rows: the axis, a note when intervals are missing, the
	// selected function's line, its callers and callees, the total (two
	// lines at most).
	rows := max(1, h-len(lines)-7)
	w.sel = min(w.sel, max(0, len(tested)-1))
	first := max(0, min(w.sel-rows+1, len(tested)-rows))
	shown := tested[first:min(len(tested), first+rows)]
	table, noInterval := f.whereTable(shown, w.sel-first, wd)
	lines = append(lines, table...)
	if len(tested) == 0 {
		lines = append(lines, st.Muted.Render("  no function has samples enough in every trial yet"))
	}
	if noInterval {
		lines = append(lines, st.Muted.Render(truncate(fmt.Sprintf("  — no interval yet: %d rounds are too few for one at a function's corrected level; more rounds give one", r.Pairs), wd)))
	}
	if w.sel < len(tested) {
		fn := tested[w.sel]
		lines = append(lines, st.Muted.Render(truncate(fmt.Sprintf("  %s: %+.2f ms/round, p %s (raw %s)", fn.Name, fn.DeltaMs,
			fmtP(float64(fn.PAdjusted), r.Alpha), fmtP(float64(fn.P), r.Alpha)), wd)),
			st.Muted.Render(truncate("  callers: "+edgeList(fn.Callers), wd)),
			st.Muted.Render(truncate("  callees: "+edgeList(fn.Callees), wd)))
	}
	for _, l := range wrapWords(whereTotal(r), wd-2, 2) {
		lines = append(lines, st.Muted.Render("  "+l))
	}
	return strings.Join(lines, "\n")
}

// whereHeading is the view's title (what is compared, over how many
// rounds) and, with a report, which error rate its verdicts have.
func (f *feed) whereHeading(wd int) []string {
	w, st, r := &f.where, f.st, f.where.report
	kind, phase := "self", "all phases"
	if w.cum {
		kind = "cumulative"
	}
	if w.phase != "" {
		phase = "phase " + w.phase
	}
	title := fmt.Sprintf("where the time went · %s · %s", kind, phase)
	if r != nil {
		title += fmt.Sprintf(" · %d rounds · %d functions, BH by share", r.Pairs, r.Tested)
	}
	lines := []string{st.PanelTitle.Render(truncate(title, wd))}
	if r != nil {
		// Which error rate this view's verdicts have (issue 34).
		family := fmt.Sprintf("  declared family (%s): false discovery rate ≤ %g", profdiff.DeclaredFamily, r.Alpha)
		if !r.Declared {
			family = "  exploratory view: not corrected across views; declared family: " + profdiff.DeclaredFamily
		}
		lines = append(lines, st.Muted.Render(truncate(family, wd)))
	}
	return lines
}

// whereScale is the bars' half-width: the intervals of the functions
// reported changed, else the estimates shown; a wider interval is cut
// with ◀ ▶.
func whereScale(shown []profdiff.Function) float64 {
	scale, reported := 1.0, false
	for _, fn := range shown {
		if fn.Verdict == analysis.VerdictRegression || fn.Verdict == analysis.VerdictImprovement {
			reported = true
			for _, x := range []analysis.Float{fn.DeltaPct, fn.CILowPct, fn.CIHighPct} {
				if x.Defined() {
					scale = math.Max(scale, math.Abs(float64(x)))
				}
			}
		}
	}
	if !reported {
		for _, fn := range shown {
			if fn.DeltaPct.Defined() {
				scale = math.Max(scale, math.Abs(float64(fn.DeltaPct)))
			}
		}
	}
	return niceScale(scale)
}

// whereTable is the functions shown, one row each (the cursor on row
// sel): the name (its end kept: the method says most), Δ%, the interval,
// the corrected p, the interval as a bar on an axis row under them, the
// verdict; noInterval when a row has none yet.
func (f *feed) whereTable(shown []profdiff.Function, sel, wd int) (lines []string, noInterval bool) {
	st, r := f.st, f.where.report
	scale := whereScale(shown)
	const numW, ivW, pW, verdW = 7, 17, 7, 12
	room := wd - numW - ivW - pW - verdW - 7 // the cursor and the gaps
	barW := min(30, room*2/5)
	if barW < 7 {
		barW = 0
	}
	nameW := max(12, min(40, room-barW))
	var cells [][]string
	var styles []lipgloss.Style
	for _, fn := range shown {
		bar, iv := pad("", barW), "—"
		if fn.CILowPct.Defined() {
			iv = "[" + fmtPctShort(float64(fn.CILowPct)) + ", " + fmtPctShort(float64(fn.CIHighPct)) + "]"
			bar = ciBar(float64(fn.CILowPct), float64(fn.DeltaPct), float64(fn.CIHighPct), scale, barW)
		} else {
			noInterval = true
		}
		row := []string{keepEnd(fn.Name, nameW), fmtPctShort(float64(fn.DeltaPct)), iv, fmtP(float64(fn.PAdjusted), r.Alpha)}
		if barW > 0 {
			row = append(row, bar)
		}
		cells = append(cells, append(row, verdictWord(fn.Verdict)))
		styles = append(styles, st.Verdict(fn.Verdict))
	}
	if len(cells) == 0 {
		return nil, noInterval
	}
	if barW > 0 {
		// The bars' scale: a row of the table, so it lines up with them.
		cells = append(cells, []string{"", "", "", "", ciAxis(scale, barW), ""})
		styles = append(styles, st.Muted)
	}
	axisRow := len(cells) - 1
	table := pickerTable(st, cells, sel, wd, func(row, col int) (lipgloss.Style, bool) {
		// Bars and verdicts in the verdict's colour; the axis muted.
		return styles[row], col >= 4 || row == axisRow && barW > 0
	})
	return []string{table}, noInterval
}

// whereTotal is the view's total: its Δ per round, the share the
// reported functions make of it (the outermost only for cumulative
// time, nested time counted once) and the functions too rare to test.
func whereTotal(r *profdiff.Report) string {
	total := fmt.Sprintf("Δ %+.2f ms/round (%s)", r.TotalDeltaMs, r.TotalOf)
	if r.ExplainedPct.Defined() {
		summed := "reported functions"
		if r.Kind == "cumulative" {
			summed = "outermost reported"
		}
		total += fmt.Sprintf(" · %s: %.0f%% of it", summed, float64(r.ExplainedPct))
	}
	if r.Rare > 0 {
		total += fmt.Sprintf(" · %d too rare to test", r.Rare)
	}
	return total
}

// keepEnd cuts s to n cells keeping its end (a function's own name), the
// cut marked with an ellipsis.
func keepEnd(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 2 {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// niceScale rounds an axis half-width up to a whole multiple of its power
// of ten (22.5 → 30, 3.2 → 4), so the axis reads in round numbers and the
// bars keep most of their width.
func niceScale(x float64) float64 {
	if x <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	return math.Ceil(x/p) * p
}

func edgeList(es []profdiff.Edge) string {
	if len(es) == 0 {
		return "—"
	}
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("%s (%d)", e.Name, e.Samples))
	}
	return strings.Join(parts, ", ")
}
