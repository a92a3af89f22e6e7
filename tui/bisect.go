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
	"github.com/perflab/perflab/lab/bisect"
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
		started: time.Now(), hi: len(cands) - 1, left: max(0, len(cands)-2), width: 80}
}

// Init starts reading the bisect's events.
func (v *BisectView) Init() tea.Cmd { return waitForBisect(v.events) }

// Update takes bisect events and keys.
func (v *BisectView) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		v.width = msg.Width
	case bisectEventMsg:
		if !msg.ok {
			v.finished, v.current = true, nil
			return v, nil
		}
		v.apply(msg.ev)
		return v, waitForBisect(v.events)
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
	case bisect.KindSession:
		if e := ev.Item.Event; e.Type == lab.EventTrial && e.Trial != nil && e.Trial.Counted() {
			v.trials++
		}
	case bisect.KindDone:
		v.comps = append(v.comps, *ev.Comparison)
		v.doneAt = append(v.doneAt, v.now().Sub(v.started))
		v.current = nil
	case bisect.KindStep:
		v.steps = append(v.steps, *ev.Step)
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
	var b strings.Builder
	fmt.Fprintf(&b, "bisect of %d builds: %s\n", len(v.cands), v.axis())
	fmt.Fprintln(&b, v.st.Muted.Render("  g ruled good · ? in doubt · b ruled bad · ▲ step · A/B compared now"))
	fmt.Fprintln(&b)
	for _, c := range v.comps {
		fmt.Fprintf(&b, "  %2d → %-2d %-7s %s  Δ %s [%s, %s]  %d trials\n", c.A, c.B, c.Purpose, v.st.Verdict(c.Verdict).Render(fmt.Sprintf("%-11s", c.Verdict)),
			format.SignedPct(c.DeltaPct), format.SignedPct(c.CILowPct), format.SignedPct(c.CIHighPct), c.Trials)
	}
	if c := v.current; c != nil {
		att := ""
		if v.attempt > 0 {
			att = fmt.Sprintf(" (attempt %d)", v.attempt+1)
		}
		fmt.Fprintf(&b, "  %2d → %-2d %-7s running%s: %d counted trials\n", c.A, c.B, c.Purpose, att, v.trials)
	}
	if med := v.medians(); med != "" {
		fmt.Fprintln(&b, med)
	}
	fmt.Fprintln(&b)
	for i, s := range v.steps {
		label := "first bad"
		if i > 0 {
			label = "other step"
		}
		fmt.Fprintf(&b, "%s: build %d %s  Δ %s [%s, %s]\n", label, s.Index, v.cands[s.Index].Name,
			format.SignedPct(s.DeltaPct), format.SignedPct(s.CILowPct), format.SignedPct(s.CIHighPct))
	}
	prog := fmt.Sprintf("in doubt: %d builds · %d trials · %d comparisons", v.left, v.trialsTotal, len(v.comps))
	if eta, ok := v.eta(); ok {
		prog += " · ETA " + format.Elapsed(eta)
	}
	fmt.Fprintln(&b, prog)
	switch {
	case v.confirm:
		fmt.Fprintln(&b, "abort the bisect, keeping the comparisons done? y/N")
	case v.finished:
		fmt.Fprintln(&b, v.st.Muted.Render("done · q quits"))
	default:
		fmt.Fprintln(&b, v.st.Muted.Render("x abort"))
	}
	if v.status != "" {
		fmt.Fprintln(&b, v.status)
	}
	return b.String()
}

// medians lists each measured build's median of the decisive metric, by
// build, from the last comparison that ran it.
func (v *BisectView) medians() string {
	med := map[int]analysis.Float{}
	unit := ""
	for _, c := range v.comps {
		med[c.A], med[c.B], unit = c.MedianA, c.MedianB, c.Unit
	}
	var parts []string
	for i := range v.cands {
		if m, ok := med[i]; ok && m.Defined() {
			parts = append(parts, fmt.Sprintf("%d: %s", i, format.Num(m)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("  medians (%s): %s", unit, strings.Join(parts, " · "))
}
