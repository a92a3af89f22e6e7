package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/guptarohit/asciigraph"

	"github.com/perflab/perflab/lab"
)

// eventsAppliedMsg hands a dashboard's panes the events it has just
// folded, in order. A dashboard sends it to its own panes; it never goes
// through the program.
type eventsAppliedMsg struct{ events []lab.Event }

// trialsKept bounds the trials a trialsPane keeps: more than any screen
// has rows, so a long run does not keep a second copy of every trial.
const trialsKept = 1000

// trialsPane is the stream of trials, newest last: index, round, arm,
// status and metrics, as many as fit.
type trialsPane struct {
	st     *Styles
	trials []lab.Trial // the latest, at most 2×trialsKept
	width  int
	height int
}

func newTrialsPane(st *Styles) trialsPane { return trialsPane{st: st} }

// SetSize sets the pane's area; the title takes one line.
func (p *trialsPane) SetSize(w, h int) { p.width, p.height = w, h }

// Update keeps the trials among the events.
func (p trialsPane) Update(msg tea.Msg) (trialsPane, tea.Cmd) {
	if msg, ok := msg.(eventsAppliedMsg); ok {
		for _, ev := range msg.events {
			if ev.Type == lab.EventTrial && ev.Trial != nil {
				p.trials = append(p.trials, *ev.Trial)
			}
		}
		if len(p.trials) > 2*trialsKept {
			p.trials = append([]lab.Trial(nil), p.trials[len(p.trials)-trialsKept:]...)
		}
	}
	return p, nil
}

// Len is the number of trials seen (up to the number kept).
func (p trialsPane) Len() int { return len(p.trials) }

// View draws the title and the latest trials that fit.
func (p trialsPane) View() string {
	st, w, h := p.st, p.width, p.height
	if h <= 0 {
		return ""
	}
	lines := []string{st.PanelTitle.Render("trials")}
	h--
	start := max(0, len(p.trials)-h)
	for _, t := range p.trials[start:] {
		arm := t.Arm // "A", "B", "C", ... with more than two builds
		switch t.Arm {
		case lab.ArmControl:
			arm = "A"
		case lab.ArmTreatment:
			arm = "B"
		}
		// "ok" goes without saying: the room is the metrics'.
		line := fmt.Sprintf("#%-4d r%-3d %s", t.Index, t.Round, arm)
		if t.Device != "" {
			line += " " + t.Device // a pool's trial says where it ran
		}
		switch {
		case t.Status != lab.StatusOK:
			line += " " + t.Status
		case t.Warmup:
			line += " warm-up"
		}
		var ms []string
		for _, mt := range t.Metrics {
			ms = append(ms, mt.Name+"="+fmtNum(mt.Value))
		}
		rest := strings.Join(ms, " ")
		if t.Status != lab.StatusOK {
			rest = t.Reason
		}
		line = truncate(line+" "+rest, w)
		switch {
		case t.Status != lab.StatusOK:
			line = st.Error.Render(line)
		case t.Warmup:
			line = st.Muted.Render(line)
		}
		lines = append(lines, line)
	}
	if len(p.trials) == 0 {
		lines = append(lines, st.Muted.Render("  no trials yet"))
	}
	return strings.Join(lines, "\n")
}

// chartPane is the MFLOPS of the stability probe and its verdict. It
// keeps the probe's samples and computes the verdict (stabFor) as they
// come.
type chartPane struct {
	st      *Styles
	samples []lab.ProbeSample
	summary string   // one-line verdict so far
	reasons []string // why
	stabFor func([]lab.ProbeSample) (string, []string)
	width   int
	height  int
}

func newChartPane(st *Styles, stabFor func([]lab.ProbeSample) (string, []string)) chartPane {
	return chartPane{st: st, stabFor: stabFor}
}

// SetSize sets the pane's area.
func (p *chartPane) SetSize(w, h int) { p.width, p.height = w, h }

// Update keeps the probe samples among the events and refreshes the
// verdict when some came.
func (p chartPane) Update(msg tea.Msg) (chartPane, tea.Cmd) {
	applied, ok := msg.(eventsAppliedMsg)
	if !ok {
		return p, nil
	}
	probe := false
	for _, ev := range applied.events {
		if ev.Type == lab.EventProbe && ev.Probe != nil {
			p.samples = append(p.samples, *ev.Probe)
			probe = true
		}
	}
	if probe && p.stabFor != nil && len(p.samples) >= 2 {
		p.summary, p.reasons = p.stabFor(p.samples)
	}
	return p, nil
}

// Samples is the number of probe samples so far.
func (p chartPane) Samples() int { return len(p.samples) }

// Verdict is the one-line verdict so far ("" before two samples) and its
// reasons.
func (p chartPane) Verdict() (string, []string) { return p.summary, p.reasons }

// View draws the MFLOPS with asciigraph. The y axis is a fixed band
// around the mean of the samples shown (±5%, widened in steps only when a
// sample falls outside), so a fraction of a percent of noise looks small
// and a real drop looks big; the band is labelled under the chart. The
// verdict goes on the title line when it fits, else on a line of its
// own, wrapped rather than cut.
func (p chartPane) View() string {
	st, w, h, summary := p.st, p.width, p.height, p.summary
	title := "MFLOPS stability check"
	var lines []string
	switch {
	case summary == "":
		lines = []string{st.PanelTitle.Render(truncate(title, w))}
	case len([]rune(title+" · "+summary)) <= w:
		lines = []string{st.PanelTitle.Render(title + " · " + summary)}
	default:
		lines = []string{st.PanelTitle.Render(truncate(title, w))}
		for _, l := range wrapWords(summary, w, 2) {
			lines = append(lines, st.PanelTitle.Render(l))
		}
	}
	h -= len(lines) - 1
	if h < 4 || w < 20 {
		return strings.Join(lines, "\n")
	}
	n := len(p.samples)
	if n == 0 {
		return strings.Join(append(lines, st.Muted.Render("  waiting for samples")), "\n")
	}
	width := w - 12 // room for the y-axis labels
	from := max(0, n-width)
	series := make([]float64, 0, n-from)
	for _, s := range p.samples[from:] {
		series = append(series, s.MFLOPS)
	}
	if len(series) == 1 {
		series = append(series, series[0])
	}
	mean, band := mflopsBand(series)
	opts := []asciigraph.Option{asciigraph.Height(h - 2), asciigraph.Precision(0)}
	if mean > 0 {
		opts = append(opts, asciigraph.LowerBound(mean*(1-band/100)), asciigraph.UpperBound(mean*(1+band/100)))
	}
	if len(series) > width {
		opts = append(opts, asciigraph.Width(width))
	}
	// Fewer samples than columns are drawn one per column: stretching them
	// would show a short check as if it filled the window.
	graph := asciigraph.Plot(series, opts...)
	for _, l := range strings.Split(graph, "\n") {
		lines = append(lines, truncate(l, w))
	}
	last := p.samples[n-1]
	info := fmt.Sprintf("  t=%.0fs  %.0f MFLOPS", last.T, last.MFLOPS)
	if mean > 0 {
		info += fmt.Sprintf("  scale: mean %.0f ±%g%%", mean, band)
	}
	if last.TempC > 0 {
		info += fmt.Sprintf("  %.1f°C", last.TempC)
	}
	if len(last.FreqKHz) > 0 {
		var fs []string
		for _, f := range last.FreqKHz {
			fs = append(fs, fmt.Sprintf("%d", f/1000))
		}
		info += "  MHz " + strings.Join(fs, "/")
	}
	return strings.Join(append(lines, st.Muted.Render(truncate(info, w))), "\n")
}
