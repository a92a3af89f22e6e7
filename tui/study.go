package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/study"
)

// studyUpdatedMsg carries the updates read from a study's stream since the
// last message; closed means the stream has ended.
type studyUpdatedMsg struct {
	stream  int
	updates []study.Update
	closed  bool
}

// studyStartedMsg says the backend has started a study (or why not).
type studyStartedMsg struct {
	stream  int
	updates <-chan study.Update
	cancel  context.CancelFunc
	err     error
}

// startStudy asks the backend to start the study, off the Update path.
func startStudy(ctx context.Context, b Backend, plan StudyPlan, stream int) tea.Cmd {
	return func() tea.Msg {
		if b.StartStudy == nil {
			return studyStartedMsg{stream: stream, err: errors.New("this build of perflab cannot run studies (no lab backend)")}
		}
		sctx, cancel := context.WithCancel(ctx)
		return studyStartedMsg{stream: stream, updates: b.StartStudy(sctx, plan), cancel: cancel}
	}
}

// maxStudyBatch bounds how many queued updates one message carries.
const maxStudyBatch = 256

// waitForStudy reads at least one update from ch, then whatever else is
// already queued, and reports them as one message. It is re-armed after
// every message, so exactly one read waits on the stream.
func waitForStudy(stream int, ch <-chan study.Update) tea.Cmd {
	return func() tea.Msg {
		msg := studyUpdatedMsg{stream: stream}
		u, ok := <-ch
		if !ok {
			msg.closed = true
			return msg
		}
		msg.updates = append(msg.updates, u)
		for len(msg.updates) < maxStudyBatch {
			select {
			case u, ok := <-ch:
				if !ok {
					msg.closed = true
					return msg
				}
				msg.updates = append(msg.updates, u)
			default:
				return msg
			}
		}
		return msg
	}
}

// phaseTally counts the runs of one phase by outcome.
type phaseTally struct {
	runs     int
	outcomes map[string]int
}

func (t *phaseTally) add(outcome string) {
	if t.outcomes == nil {
		t.outcomes = map[string]int{}
	}
	t.runs++
	t.outcomes[outcome]++
}

// significant counts the runs whose verdict was a regression or an
// improvement.
func (t phaseTally) significant() int {
	return t.outcomes[analysis.VerdictRegression] + t.outcomes[analysis.VerdictImprovement]
}

// completed counts the runs that did not fail.
func (t phaseTally) completed() int { return t.runs - t.outcomes["failed"] }

// studyDash is the dashboard of a validation or order study: progress with
// ETA, a live tally of the runs' verdicts, and the result when it is in.
type studyDash struct {
	st     *Styles
	plan   StudyPlan
	device lab.DeviceInfo
	alpha  float64
	conf   float64

	stream  int
	updates <-chan study.Update
	cancel  context.CancelFunc

	last     *study.Progress
	tallies  map[string]*phaseTally
	fpRates  []float64 // running A/A false-positive rate after each A/A run, in %
	recent   []string  // the last runs, newest last
	failures []string

	validation *study.Validation
	order      *study.Order
	result     studyResult // draws validation or order once in
	err        error

	starting     bool // asked the backend, no stream yet
	aborted      bool // the user aborted
	finished     bool // the stream has closed
	quitting     bool
	confirmAbort bool
	abortThenQ   bool
	status       string

	keys          studyKeys
	width, height int
}

// studyKeys act on a running study.
type studyKeys struct {
	Abort key.Binding
}

// ShortHelp lists the study keys.
func (k studyKeys) ShortHelp() []key.Binding { return []key.Binding{k.Abort} }

// FullHelp groups the study keys.
func (k studyKeys) FullHelp() [][]key.Binding { return [][]key.Binding{{k.Abort}} }

// newStudyDash starts watching a study; start it with startStudy.
func newStudyDash(st *Styles, dev lab.DeviceInfo, plan StudyPlan) *studyDash {
	d := &studyDash{st: st, plan: plan, device: dev, tallies: map[string]*phaseTally{},
		alpha: lab.DefaultAlpha, conf: 0.95}
	if plan.Experiment != nil {
		if plan.Experiment.Alpha > 0 {
			d.alpha = plan.Experiment.Alpha
		}
		if plan.Experiment.Confidence > 0 {
			d.conf = plan.Experiment.Confidence
		}
	}
	d.keys.Abort = key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "abort"))
	d.status = "starting " + plan.Study
	return d
}

// start asks the backend for the study; the first wait is armed when it
// has started.
func (d *studyDash) start(ctx context.Context, b Backend, stream int) tea.Cmd {
	d.stream, d.starting = stream, true
	return startStudy(ctx, b, d.plan, stream)
}

// running reports whether the study is starting or still producing updates.
func (d *studyDash) running() bool { return !d.finished && (d.starting || d.updates != nil) }

// Update applies stream messages and the abort confirmation.
func (d *studyDash) Update(msg tea.Msg) (*studyDash, tea.Cmd) {
	return d, d.update(msg)
}

func (d *studyDash) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case studyStartedMsg:
		if msg.stream != d.stream || !d.starting {
			if msg.cancel != nil {
				msg.cancel() // a study nobody watches any more
			}
			return nil
		}
		d.starting = false
		if msg.err != nil {
			d.err, d.finished = msg.err, true
			if d.quitting {
				return tea.Quit
			}
			return nil
		}
		d.updates, d.cancel = msg.updates, msg.cancel
		if d.aborted {
			d.cancel() // aborted while starting: the stream ends at once
		}
		return waitForStudy(d.stream, d.updates)
	case studyUpdatedMsg:
		if msg.stream != d.stream || d.updates == nil {
			return nil
		}
		for _, u := range msg.updates {
			d.apply(u)
		}
		if msg.closed {
			d.finished = true
			d.cancel()
			if d.quitting {
				return tea.Quit
			}
			switch {
			case d.validation != nil || d.order != nil:
				d.status = "done · esc back to the stepper · q quits"
				if (d.validation != nil && d.validation.Partial) || (d.order != nil && d.order.Partial) {
					d.status = "aborted: the result covers the runs that finished · esc back · q quits"
				}
			case d.err == nil:
				d.err = errors.New("the study ended without a result")
			}
			return nil
		}
		return waitForStudy(d.stream, d.updates)
	case tea.KeyPressMsg:
		if d.confirmAbort {
			d.confirmAbort = false
			if msg.String() == "y" || msg.String() == "Y" {
				d.abort(d.abortThenQ)
			} else {
				d.status = "not aborted"
			}
			return nil
		}
		if key.Matches(msg, d.keys.Abort) && d.running() {
			d.confirmAbort, d.abortThenQ = true, false
		}
	}
	return nil
}

// apply records one update of the stream.
func (d *studyDash) apply(u study.Update) {
	if p := u.Progress; p != nil {
		if d.last == nil && strings.HasPrefix(d.status, "starting") {
			d.status = fmt.Sprintf("%s of %s · results when every run is in · x aborts", d.plan.Study, d.device.ID)
		}
		d.last = p
		t := d.tallies[p.Phase]
		if t == nil {
			t = &phaseTally{}
			d.tallies[p.Phase] = t
		}
		t.add(p.Outcome)
		if p.Phase == "aa" && t.completed() > 0 && p.Outcome != "failed" {
			d.fpRates = append(d.fpRates, 100*float64(t.significant())/float64(t.completed()))
		}
		line := fmt.Sprintf("%s #%d: %s", p.Phase, p.Index+1, p.Outcome)
		if p.Error != "" {
			line += " (" + p.Error + ")"
			d.failures = append(d.failures, line)
		}
		d.recent = append(d.recent, line)
		if len(d.recent) > 50 {
			d.recent = d.recent[len(d.recent)-50:]
		}
	}
	if u.Validation != nil {
		d.validation = u.Validation
		d.result = &validationView{st: d.st, v: u.Validation}
		d.result.SetSize(d.bodySize())
	}
	if u.Order != nil {
		d.order = u.Order
		d.result = &orderView{st: d.st, o: u.Order}
		d.result.SetSize(d.bodySize())
	}
	switch {
	case u.Err == nil:
	case errors.Is(u.Err, context.Canceled):
		if u.Validation == nil && u.Order == nil {
			d.err = errors.New("aborted before any run finished: no result")
		}
	default:
		d.err = u.Err
	}
}

// abort cancels the study; the stream then ends with a partial result.
func (d *studyDash) abort(thenQuit bool) {
	d.quitting, d.aborted = thenQuit, true
	if d.cancel != nil {
		d.cancel()
	}
	d.status = "aborting: waiting for the runs in progress…"
}

// Interrupt handles ctrl+c: the first asks like q, a second aborts and
// quits without waiting for the runs in progress.
func (d *studyDash) Interrupt() tea.Cmd {
	if d.confirmAbort || d.quitting {
		d.abort(true)
		return tea.Quit
	}
	return d.AskQuit()
}

// AskQuit handles q: a running study asks y/N first.
func (d *studyDash) AskQuit() tea.Cmd {
	if !d.running() {
		if d.cancel != nil {
			d.cancel()
		}
		return tea.Quit
	}
	d.confirmAbort, d.abortThenQ = true, true
	return nil
}

// Typing reports whether the dashboard wants raw keys (y/N).
func (d *studyDash) Typing() bool { return d.confirmAbort }

// CanLeave: once the study is over, esc goes back to the stepper.
func (d *studyDash) CanLeave() bool { return !d.running() }

// ShortHelp lists the keys that do something now.
func (d *studyDash) ShortHelp() []key.Binding { return d.keyMap().short }

// FullHelp groups them.
func (d *studyDash) FullHelp() [][]key.Binding { return d.keyMap().full }

func (d *studyDash) keyMap() keyHelp {
	if d.confirmAbort {
		return confirmKeys()
	}
	k := d.keys
	k.Abort.SetEnabled(d.running())
	return keyHelp{short: k.ShortHelp(), full: k.FullHelp()}
}

// SetSize sets the dashboard's area.
// Stream is the id of the study's stream (0 before it starts).
func (d *studyDash) Stream() int { return d.stream }

// SetSize sets the dashboard's area.
func (d *studyDash) SetSize(w, h int) {
	d.width, d.height = w, h
	if d.result != nil {
		d.result.SetSize(d.bodySize())
	}
}

// bodySize is the area below the two head lines and above the status line.
func (d *studyDash) bodySize() (w, h int) { return d.width, d.height - 2 }

// stateWord says what the study is doing.
func (d *studyDash) stateWord() string {
	switch {
	case d.finished && d.err != nil && d.validation == nil && d.order == nil:
		if d.aborted {
			return "aborted"
		}
		return "failed"
	case d.finished && ((d.validation != nil && d.validation.Partial) || (d.order != nil && d.order.Partial)):
		return "aborted"
	case d.finished:
		return "done"
	case d.aborted:
		return "aborting"
	case d.last == nil:
		return "starting"
	}
	return "running"
}

// View draws the study dashboard into exactly width × height cells; the
// root draws the status line below.
func (d *studyDash) View() string {
	w, h := d.width, d.height
	if w <= 0 || h <= 0 {
		return ""
	}
	st := d.st
	exp := d.plan.Experiment
	if exp == nil {
		exp = &lab.Experiment{}
	}
	head := st.Title.Render(d.device.ID) + " · " + st.Header.Render(d.plan.Study+" · "+d.stateWord())
	// The builds before the settings: on a narrow screen the order gives way.
	head += fmt.Sprintf(" · A %s vs B %s · %d/arm · order %s", label(exp.Builds[lab.ArmControl]),
		label(exp.Builds[lab.ArmTreatment]), exp.Trials, exp.Order)
	top := []string{truncate(head, w)}
	done, total := 0, d.plannedRuns()
	var elapsed, eta time.Duration
	if p := d.last; p != nil {
		done, total, elapsed, eta = p.Done, p.Total, p.Elapsed, p.ETA
	}
	info := fmt.Sprintf(" %d/%d runs · %s", done, total, fmtDur(elapsed))
	if eta > 0 && !d.finished {
		info += " · ETA " + fmtDur(eta)
	}
	frac := 0.0
	if total > 0 {
		frac = min(1, float64(done)/float64(total))
	}
	top = append(top, progressLine(st, frac, info, w))

	bodyH := h - len(top)
	body := ""
	if d.result != nil {
		body = d.result.View()
	} else {
		body = strings.Join(d.liveLines(w, bodyH), "\n")
	}
	return strings.Join(top, "\n") + "\n" + block(body, w, bodyH)
}

// StatusLine is the y/N question, the error or the status.
func (d *studyDash) StatusLine() string {
	st := d.st
	switch {
	case d.confirmAbort:
		return st.Warning.Render("abort the study? the result will cover the runs that finished (y/N)")
	case d.err != nil:
		return st.Error.Render(d.err.Error())
	}
	return st.Muted.Render(d.status)
}

// plannedRuns is the number of runs the plan asks for, before the first
// progress report says.
func (d *studyDash) plannedRuns() int {
	if d.plan.Study == StudyOrder {
		return 2 * d.plan.Runs
	}
	n := d.plan.AA
	if d.plan.EffectPct != 0 {
		n *= 2
	}
	return n
}

// rateLine is the A/A false-positive tally with its binomial CI against α.
func (d *studyDash) rateLine(k, n int) string {
	st := d.st
	if n == 0 {
		return st.Muted.Render("A/A false positives  no experiment finished yet")
	}
	p, _ := analysis.BinomialCI(k, n, d.conf)
	s := fmt.Sprintf("A/A false positives  %d of %d = %s  %.0f%% CI %s–%s  ", k, n, format.Rate(p.Rate), 100*d.conf, format.Rate(p.CILow), format.Rate(p.CIHigh))
	switch j := p.JudgeAlpha(d.alpha, d.conf); j {
	case analysis.AlphaExcluded:
		return s + st.Regression.Render(fmt.Sprintf("EXCLUDES α = %g", d.alpha))
	case analysis.AlphaTooFew:
		return s + st.Warning.Render(j)
	}
	return s + st.OK.Render(fmt.Sprintf("holds α = %g", d.alpha))
}

// liveLines draws the tally while the study runs.
func (d *studyDash) liveLines(w, h int) []string {
	st := d.st
	var lines []string
	if d.plan.Study == StudyValidate {
		aa := d.tally("aa")
		lines = append(lines, truncate(d.rateLine(aa.significant(), aa.completed()), w))
		if d.plan.EffectPct != 0 {
			ef := d.tally("effect")
			s := fmt.Sprintf("known effect %+g%%    ", d.plan.EffectPct)
			if n := ef.completed(); n > 0 {
				s += fmt.Sprintf("significant in %d of %d = %.1f%% (the result checks the direction)", ef.significant(), n, 100*float64(ef.significant())/float64(n))
			} else {
				s += st.Muted.Render("runs after the A/A experiments")
			}
			lines = append(lines, truncate(s, w))
		}
	}
	phases := []string{"aa", "effect"}
	if d.plan.Study == StudyOrder {
		phases = []string{lab.OrderFixed, lab.OrderRandom}
	}
	for _, ph := range phases {
		t := d.tally(ph)
		if t.runs == 0 {
			continue
		}
		lines = append(lines, truncate(fmt.Sprintf("%-7s %3d %s: %s", ph, t.runs, plural(t.runs, "run ", "runs"), outcomeSummary(st, t)), w))
	}
	if n := len(d.failures); n > 0 {
		lines = append(lines, st.Warning.Render(truncate(fmt.Sprintf("⚠ %d %s failed; last: %s", n, plural(n, "run", "runs"), d.failures[n-1]), w)))
	}
	if d.plan.Study == StudyValidate && len(d.fpRates) >= 2 && h-len(lines) >= 8 {
		lines = append(lines, "")
		ch := min(12, h-len(lines)-4)
		lines = append(lines, rateChart(st, d.fpRates, 100*d.alpha, w, ch)...)
	}
	if room := h - len(lines) - 2; room > 0 && len(d.recent) > 0 {
		lines = append(lines, "", st.PanelTitle.Render("runs"))
		start := max(0, len(d.recent)-room)
		for _, l := range d.recent[start:] {
			lines = append(lines, st.Muted.Render(truncate("  "+l, w)))
		}
	}
	if d.last == nil {
		lines = append(lines, st.Muted.Render("waiting for the first run to finish…"))
	}
	return lines
}

func (d *studyDash) tally(phase string) phaseTally {
	if t := d.tallies[phase]; t != nil {
		return *t
	}
	return phaseTally{}
}

// outcomeSummary lists a phase's verdict counts, each in its colour.
func outcomeSummary(st *Styles, t phaseTally) string {
	var parts []string
	for _, k := range []string{analysis.VerdictNoChange, analysis.VerdictRegression, analysis.VerdictImprovement, analysis.VerdictInconclusive, "failed"} {
		if n := t.outcomes[k]; n > 0 {
			s := st.Verdict(k)
			if k == "failed" {
				s = st.Error
			}
			parts = append(parts, s.Render(fmt.Sprintf("%s %d", k, n)))
		}
	}
	return strings.Join(parts, " · ")
}

// rateChart plots the running A/A false-positive rate against α.
func rateChart(st *Styles, rates []float64, alphaPct float64, w, h int) []string {
	lines := []string{st.PanelTitle.Render(truncate(fmt.Sprintf("A/A false-positive rate %% after each experiment (flat line: α = %g%%)", alphaPct), w))}
	return append(lines, plotLines([][]float64{rates, constSeries(alphaPct, len(rates))}, w, h, 1)...)
}

func constSeries(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func plural(n int, one, many string) string { return format.Plural(n, one, many) }
