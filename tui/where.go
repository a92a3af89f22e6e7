package tui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
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
		// The trials shown so far.
		for _, e := range f.state.eventsSoFar() {
			if e.Type == lab.EventTrial && e.Trial != nil {
				opt.MaxIndex = e.Trial.Index + 1
			}
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
	return []key.Binding{w.keys.Toggle, w.keys.Phase, w.keys.Cum, w.keys.Up}
}

// whereView draws the where view into w × h cells.
func (f *feed) whereView(wd, h int) string {
	w, st := &f.where, f.st
	kind := "self"
	if w.cum {
		kind = "cumulative"
	}
	phase := "all phases"
	if w.phase != "" {
		phase = "phase " + w.phase
	}
	r := w.report
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
	rows := max(1, h-len(lines)-4)
	w.sel = min(w.sel, max(0, len(tested)-1))
	first := max(0, min(w.sel-rows+1, len(tested)-rows))
	scale := 1.0
	for _, fn := range tested[first:min(len(tested), first+rows)] {
		for _, x := range []analysis.Float{fn.CILowPct, fn.CIHighPct, fn.DeltaPct} {
			if x.Defined() {
				scale = math.Max(scale, math.Abs(float64(x)))
			}
		}
	}
	scale = math.Ceil(scale)
	barW := max(0, min(30, wd-min(28, max(12, wd/3))-8-8-13-3))
	var cells [][]string
	var styles []lipgloss.Style
	for i := first; i < len(tested) && i < first+rows; i++ {
		fn := tested[i]
		bar := ""
		if barW >= 7 && fn.CILowPct.Defined() {
			bar = ciBar(float64(fn.CILowPct), float64(fn.DeltaPct), float64(fn.CIHighPct), scale, barW)
		} else if barW >= 7 {
			bar = pad("", barW)
		}
		cells = append(cells, []string{fn.Name, fmt.Sprintf("%+.2fms", fn.DeltaMs), format.SignedPct(fn.DeltaPct), bar, verdictWord(fn.Verdict)})
		styles = append(styles, st.Verdict(fn.Verdict))
	}
	if len(cells) > 0 {
		lines = append(lines, pickerTable(st, cells, w.sel-first, wd, func(row, col int) (lipgloss.Style, bool) {
			return styles[row], col >= 3 // the interval's bar and the verdict in the verdict's colour
		}))
	}
	if len(tested) == 0 {
		lines = append(lines, st.Muted.Render("  no function has samples enough in every trial yet"))
	}
	if w.sel < len(tested) {
		fn := tested[w.sel]
		lines = append(lines, st.Muted.Render(truncate("  callers: "+edgeList(fn.Callers), wd)),
			st.Muted.Render(truncate("  callees: "+edgeList(fn.Callees), wd)))
	}
	total := fmt.Sprintf("  Δ %+.2f ms/round (%s)", r.TotalDeltaMs, r.TotalOf)
	if r.ExplainedPct.Defined() {
		summed := "reported functions"
		if r.Kind == "cumulative" {
			summed = "outermost reported" // nested time counted once
		}
		total += fmt.Sprintf(" · %s: %.0f%% of it", summed, float64(r.ExplainedPct))
	}
	if r.Rare > 0 {
		total += fmt.Sprintf(" · %d too rare to test", r.Rare)
	}
	lines = append(lines, st.Muted.Render(truncate(total, wd)))
	return strings.Join(lines, "\n")
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
