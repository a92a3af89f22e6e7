package tui

import (
	"fmt"
	"math"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
)

// BisectView is the bisect screen: the builds on an axis (ruled good,
// in doubt, ruled bad, the step found), the comparisons so far with their
// verdicts, the current comparison's trials, progress with the builds
// left and an ETA; x aborts (y/N), keeping what is done.
type BisectView struct {
	st     Styles
	cands  []bisect.Candidate
	events <-chan bisect.Event
	cancel func()
	now    func() time.Time

	comps       []bisect.Comparison
	current     *bisect.Comparison
	attempt     int
	trials      int // counted trials of the current session
	lo, hi      int
	left        int
	trialsTotal int
	steps       []bisect.Step
	started     time.Time
	doneAt      []time.Duration // elapsed at each decided comparison
	finished    bool
	confirm     bool
	status      string
	width       int
	height      int
	notes       notesPane // ! : the comparison's warnings and log in full

	// live is the current (else the last) comparison's session folded as
	// the run dashboard folds it, with the same panels; gen tells its
	// analyses from an earlier comparison's.
	live    *feed
	liveFor string
	gen     int
	metric  string
	unit    string
	samples map[int][]float64 // counted values of the decisive metric by build, all comparisons
}

// bisectPanelMsg is an analysis of the live comparison number gen.
type bisectPanelMsg struct {
	gen int
	msg reportComputedMsg
}

// bisectEventMsg carries one bisect event; ok false when the stream ended.
type bisectEventMsg struct {
	ev bisect.Event
	ok bool
}

// waitForBisect reads one event of the bisect.
func waitForBisect(ch <-chan bisect.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		return bisectEventMsg{ev, ok}
	}
}

// NewBisectView shows the bisect of cands whose events arrive on events
// (closed at the end); cancel stops it.
func NewBisectView(st Styles, cands []bisect.Candidate, events <-chan bisect.Event, cancel func()) *BisectView {
	return &BisectView{st: st, cands: cands, events: events, cancel: cancel, now: time.Now,
		started: time.Now(), hi: len(cands) - 1, left: max(0, len(cands)-2), width: 80, height: 24, samples: map[int][]float64{},
		notes: newNotesPane()}
}

// Init starts reading the bisect's events.
func (v *BisectView) Init() tea.Cmd { return waitForBisect(v.events) }

// Update takes bisect events and keys.
func (v *BisectView) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		v.width, v.height = msg.Width, msg.Height
	case bisectEventMsg:
		if !msg.ok {
			v.finished, v.current = true, nil
			return v, nil
		}
		v.apply(msg.ev)
		return v, tea.Batch(waitForBisect(v.events), v.analyze(msg.ev.Kind == bisect.KindDone))
	case bisectPanelMsg:
		if msg.gen != v.gen || v.live == nil {
			return v, nil
		}
		v.live.reported(msg.msg)
		return v, v.analyze(v.current == nil)
	case tea.KeyPressMsg:
		k := msg.String()
		switch {
		case v.confirm:
			v.confirm = false
			if k == "y" || k == "Y" {
				v.cancel()
				v.status = "aborting: the comparisons done are kept"
			} else {
				v.status = "not aborted"
			}
		case k == "ctrl+c":
			v.cancel()
			return v, tea.Quit
		case k == "esc" && v.notes.open:
			v.notes.open = false
		case v.live != nil && v.notes.key(msg):
		case k == "x" && !v.finished:
			v.confirm = true
		case k == "q" && v.finished:
			return v, tea.Quit
		}
	}
	return v, nil
}

func (v *BisectView) apply(ev bisect.Event) {
	v.lo, v.hi, v.left, v.trialsTotal = ev.Lo, ev.Hi, ev.Left, ev.TrialsTotal
	switch ev.Kind {
	case bisect.KindStart:
		c := *ev.Comparison
		v.current, v.attempt, v.trials = &c, ev.Attempt, 0
		if ev.Plan != nil {
			f := newFeed(&v.st, ev.Device, *ev.Plan, planAnalyzer(*ev.Plan), 0)
			v.live, v.liveFor = &f, fmt.Sprintf("%d → %d", c.A, c.B)
			v.gen++
		}
	case bisect.KindSession:
		e := ev.Item.Event
		if e.Type == "" {
			return
		}
		if v.live != nil {
			v.live.apply([]lab.Event{e})
		}
		if e.Type == lab.EventTrial && e.Trial != nil && e.Trial.Counted() {
			v.trials++
			v.record(ev.Metric, e.Trial)
		}
	case bisect.KindDone:
		v.comps = append(v.comps, *ev.Comparison)
		v.doneAt = append(v.doneAt, v.now().Sub(v.started))
		v.current = nil
	case bisect.KindStep:
		v.steps = append(v.steps, *ev.Step)
	}
}

// record keeps a counted trial's value of the decisive metric under its
// build's index.
func (v *BisectView) record(metric string, t *lab.Trial) {
	if v.current == nil {
		return
	}
	idx := v.current.A
	if t.Arm == lab.ArmTreatment {
		idx = v.current.B
	}
	for _, m := range t.Metrics {
		if m.Name == metric || (metric == "" && v.metric == "") {
			v.metric = m.Name
			if m.Unit != "" {
				v.unit = m.Unit
			}
			v.samples[idx] = append(v.samples[idx], m.Value)
			return
		}
	}
}

// analyze starts the live panels' analysis when trials came since the
// last one (final: the comparison ended).
func (v *BisectView) analyze(final bool) tea.Cmd {
	if v.live == nil {
		return nil
	}
	cmd := v.live.maybeAnalyze(final)
	if cmd == nil {
		return nil
	}
	gen := v.gen
	return func() tea.Msg {
		r, _ := cmd().(reportComputedMsg)
		return bisectPanelMsg{gen, r}
	}
}

// eta estimates the time left: the comparisons a binary search of the
// builds in doubt still needs (plus the step and the rest), at the mean
// pace so far.
func (v *BisectView) eta() (time.Duration, bool) {
	if len(v.doneAt) == 0 || v.finished {
		return 0, false
	}
	per := v.doneAt[len(v.doneAt)-1] / time.Duration(len(v.doneAt))
	left := int(math.Ceil(math.Log2(float64(v.left+1)))) + 2
	return per * time.Duration(left), true
}

// axis draws one cell per build: g ruled good, ? in doubt, b ruled bad,
// ▲ a step found, A/B the builds being compared.
func (v *BisectView) axis() string {
	var sb strings.Builder
	for i := range v.cands {
		c := "?"
		switch {
		case i <= v.lo:
			c = "g"
		case i >= v.hi:
			c = "b"
		}
		for _, s := range v.steps {
			if s.Index == i {
				c = "▲"
			}
		}
		if v.current != nil && i == v.current.A {
			c = "A"
		} else if v.current != nil && i == v.current.B {
			c = "B"
		}
		sb.WriteString(c)
	}
	return sb.String()
}

// View draws the screen.
func (v *BisectView) View() tea.View {
	view := tea.NewView(v.render())
	view.AltScreen = true
	view.WindowTitle = "perflab bisect"
	return view
}

func (v *BisectView) render() string {
	w := max(40, v.width)
	var b strings.Builder
	fmt.Fprintln(&b, truncate(fmt.Sprintf("bisect of %d builds: %s", len(v.cands), v.axis()), w))
	foot := v.footer(w)
	if v.notes.open && v.live != nil {
		h := max(3, v.height-2-len(foot))
		fmt.Fprintln(&b, v.st.Header.Render(truncate("comparison "+v.liveFor, w)))
		fmt.Fprintln(&b, block(v.live.notesView(w, h), w, h))
		for _, l := range foot {
			fmt.Fprintln(&b, l)
		}
		return b.String()
	}
	fmt.Fprintln(&b, v.st.Muted.Render(truncate("  g ruled good · ? in doubt · b ruled bad · ▲ step · A/B compared now", w)))
	comps := v.comps
	if n := len(comps) - bisectCompRows; n > 0 {
		fmt.Fprintln(&b, v.st.Muted.Render(fmt.Sprintf("  … %d earlier comparisons", n)))
		comps = comps[n:]
	}
	for _, c := range comps {
		fmt.Fprintln(&b, truncate(fmt.Sprintf("  %2d → %-2d %-7s %s  Δ %s [%s, %s]  %d trials", c.A, c.B, c.Purpose, v.st.Verdict(c.Verdict).Render(fmt.Sprintf("%-11s", c.Verdict)),
			format.SignedPct(c.DeltaPct), format.SignedPct(c.CILowPct), format.SignedPct(c.CIHighPct), c.Trials), w))
	}
	if c := v.current; c != nil {
		att := ""
		if v.attempt > 0 {
			att = fmt.Sprintf(" (attempt %d)", v.attempt+1)
		}
		fmt.Fprintf(&b, "  %2d → %-2d %-7s running%s: %d counted trials\n", c.A, c.B, c.Purpose, att, v.trials)
	}
	if v.live != nil {
		word := "last comparison"
		if v.current != nil {
			word = "live"
		}
		fmt.Fprintln(&b, v.st.Header.Render("comparison "+v.liveFor+" · "+word))
		v.live.ci.SetSize(w, 1)
		v.live.p.SetSize(w, 1)
		fmt.Fprintln(&b, v.live.ci.View())
		fmt.Fprintln(&b, v.live.p.View())
	}
	for _, l := range v.medianChart(w, bisectChartRows) {
		fmt.Fprintln(&b, l)
	}
	for i, s := range v.steps {
		label := "first bad"
		if i > 0 {
			label = "other step"
		}
		fmt.Fprintln(&b, truncate(fmt.Sprintf("%s: build %d %s  Δ %s [%s, %s]", label, s.Index, v.cands[s.Index].Name,
			format.SignedPct(s.DeltaPct), format.SignedPct(s.CILowPct), format.SignedPct(s.CIHighPct)), w))
	}
	prog := fmt.Sprintf("in doubt: %d builds · %d trials · %d comparisons", v.left, v.trialsTotal, len(v.comps))
	if eta, ok := v.eta(); ok {
		prog += " · ETA " + format.Elapsed(eta)
	}
	fmt.Fprintln(&b, truncate(prog, w))
	for _, l := range foot {
		fmt.Fprintln(&b, l)
	}
	return b.String()
}

// footer is the bisect screen's last lines: the y/N question or the keys,
// then the status.
func (v *BisectView) footer(w int) []string {
	notes := ""
	if v.live != nil {
		n := len(v.live.warnings())
		notes = fmt.Sprintf(" · ! %d %s & notes in full", n, plural(n, "warning", "warnings"))
		if v.notes.open {
			notes = "" // the view's title says its keys
		}
	}
	var out []string
	switch {
	case v.confirm:
		out = append(out, "abort the bisect, keeping the comparisons done? y/N")
	case v.finished:
		out = append(out, v.st.Muted.Render(truncate("done · q quits"+notes, w)))
	default:
		out = append(out, v.st.Muted.Render(truncate("x abort"+notes, w)))
	}
	if v.status != "" {
		out = append(out, truncate(v.status, w))
	}
	return out
}

// Rows of the bisect screen's lists, so that it fits 80×24.
const (
	bisectCompRows  = 4
	bisectChartRows = 6
)

// medianChart draws each measured build's median of the decisive metric
// with its 95% distribution-free CI (analysis.MedianCI: order statistics
// of the binomial, the same interval perflab report gives), from every
// counted trial of that build in the bisect's comparisons, one row per
// build on a shared axis.
func (v *BisectView) medianChart(w, maxRows int) []string {
	var idx []int
	for i := range v.cands {
		if len(v.samples[i]) > 0 {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	ivs := make([]analysis.Interval, len(idx))
	lo, hi := math.Inf(1), math.Inf(-1)
	for k, i := range idx {
		ivs[k], _ = analysis.MedianCI(v.samples[i], 0.95)
		for _, x := range []analysis.Float{ivs[k].Low, ivs[k].High, ivs[k].Point} {
			if x.Defined() {
				lo, hi = min(lo, float64(x)), max(hi, float64(x))
			}
		}
	}
	metric := v.metric
	if v.unit != "" {
		metric += " (" + v.unit + ")"
	}
	lines := []string{v.st.PanelTitle.Render(truncate("median of "+metric+" by build, 95% CI (all its trials)", w))}
	if n := len(idx) - maxRows; n > 0 {
		lines = append(lines, v.st.Muted.Render(fmt.Sprintf("  … %d lower builds not shown", n)))
		idx, ivs = idx[n:], ivs[n:]
	}
	const nameW, numW, rangeW = 10, 8, 20
	barW := min(36, w-4-nameW-numW-rangeW-6-4)
	for k, i := range idx {
		iv := ivs[k]
		rng := "[n too small]"
		if iv.Low.Defined() {
			rng = fmt.Sprintf("[%s, %s]", format.Num(iv.Low), format.Num(iv.High))
		}
		line := fmt.Sprintf("  %2d %s %s %s %4dn ", i, pad(v.cands[i].Name, nameW), pad(format.Num(iv.Point), numW), pad(rng, rangeW), len(v.samples[i]))
		if barW >= 7 {
			line += medianBar(iv, lo, hi, barW)
		}
		lines = append(lines, truncate(line, w))
	}
	return lines
}

// medianBar places an interval (├─┤) and its point (●) on [lo, hi] in w cells.
func medianBar(iv analysis.Interval, lo, hi float64, w int) string {
	cells := []rune(strings.Repeat("·", w))
	at := func(x float64) int {
		if hi <= lo {
			return w / 2
		}
		return min(w-1, max(0, int(math.Round((x-lo)/(hi-lo)*float64(w-1)))))
	}
	if iv.Low.Defined() && iv.High.Defined() {
		a, z := at(float64(iv.Low)), at(float64(iv.High))
		for c := a; c <= z; c++ {
			cells[c] = '─'
		}
		cells[a], cells[z] = '├', '┤'
	}
	if iv.Point.Defined() {
		cells[at(float64(iv.Point))] = '●'
	}
	return string(cells)
}
