package tui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// checkDash is the dashboard of a stability check: the MFLOPS chart and
// its verdict's reasons; nothing is recorded.
type checkDash struct {
	feed
	liveStream
	keys          checkKeys
	width, height int
}

// checkKeys act on a stability check.
type checkKeys struct {
	Stop key.Binding
}

// ShortHelp lists the check keys.
func (k checkKeys) ShortHelp() []key.Binding { return []key.Binding{k.Stop} }

// FullHelp groups the check keys.
func (k checkKeys) FullHelp() [][]key.Binding { return [][]key.Binding{{k.Stop}} }

// newCheckDash watches a check about to start (runStartedMsg follows).
func newCheckDash(st *Styles, dev lab.DeviceInfo, an analyzer, stream int) *checkDash {
	d := &checkDash{feed: newFeed(st, dev, lab.Experiment{}, an, stream)}
	d.keys.Stop = key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "stop check"))
	d.starting = true
	return d
}

// running reports whether the check is still producing samples.
func (d *checkDash) running() bool { return d.live(d.state.end != nil) }

// Typing reports whether the dashboard wants raw keys (y/N).
func (d *checkDash) Typing() bool { return d.confirmAbort }

// CanLeave: esc goes back to the device picker, stopping the check.
func (d *checkDash) CanLeave() bool { return true }

// Leave stops the check if it still runs.
func (d *checkDash) Leave() {
	if d.running() {
		d.abort(false)
	}
}

// Update handles the probe's stream and the stop key.
func (d *checkDash) Update(msg tea.Msg) (*checkDash, tea.Cmd) {
	switch msg := msg.(type) {
	case runStartedMsg:
		return d, d.started(msg)
	case eventsArrivedMsg:
		apply := func(evs []lab.Event) tea.Cmd { d.apply(evs); return nil }
		return d, d.arrived(msg, apply, func() tea.Cmd { return nil })
	case tea.KeyPressMsg:
		if d.confirmAbort {
			d.confirmAbort = false
			if msg.String() == "y" || msg.String() == "Y" {
				d.abort(d.abortThenQ)
				if d.abortThenQ && !d.running() {
					return d, tea.Quit
				}
			} else {
				d.status = "not aborted"
			}
			return d, nil
		}
		if key.Matches(msg, d.keys.Stop) && d.running() {
			d.confirmAbort, d.abortThenQ = true, false
		}
	}
	return d, nil
}

// abort stops the probe.
func (d *checkDash) abort(thenQuit bool) { d.liveStream.abort(thenQuit, "stopping the check…") }

// AskQuit handles q: a running check asks y/N first.
func (d *checkDash) AskQuit() tea.Cmd { return d.askQuit(d.running()) }

// Interrupt handles ctrl+c: the first asks, a second stops and quits.
func (d *checkDash) Interrupt() tea.Cmd { return d.interrupt(d.running(), "stopping the check…") }

// ShortHelp lists the keys that do something now.
func (d *checkDash) ShortHelp() []key.Binding { return d.keyMap().short }

// FullHelp groups them.
func (d *checkDash) FullHelp() [][]key.Binding { return d.keyMap().full }

func (d *checkDash) keyMap() keyHelp {
	if d.confirmAbort {
		return confirmKeys()
	}
	k := d.keys
	k.Stop.SetEnabled(d.running())
	return keyHelp{short: k.ShortHelp(), full: k.FullHelp()}
}

// SetSize sets the dashboard's area.
func (d *checkDash) SetSize(w, h int) { d.width, d.height = w, h }

// Stream is the id of the check's stream.
func (d *checkDash) Stream() int { return d.stream }

func (d *checkDash) stateWord() string {
	switch {
	case d.starting:
		return "starting"
	case d.state.end != nil:
		return "ended: " + d.state.end.Reason
	case d.finished:
		return "stopped"
	case d.quitting:
		return "aborting"
	case d.chart.Samples() > 0:
		return "stability check"
	}
	return "running"
}

// View draws the chart and the reasons into exactly width × height cells;
// the root draws the status line below.
func (d *checkDash) View() string {
	w, h := d.width, d.height
	if w <= 0 || h <= 0 {
		return ""
	}
	top := d.headLine(d.stateWord(), false, w)
	bodyH := h - 1
	// The reasons are wrapped, not cut: they are the verdict's why.
	_, reasons := d.chart.Verdict()
	var why []string
	for _, l := range reasons {
		why = append(why, wrapWords(l, w, 3)...)
	}
	d.chart.SetSize(w, max(4, bodyH-len(why)-1))
	body := strings.Join(append(viewLines(d.chart.View()), why...), "\n")
	return top + "\n" + block(body, w, bodyH)
}

// StatusLine is the y/N question, the error or the status.
func (d *checkDash) StatusLine() string {
	st := d.st
	switch {
	case d.confirmAbort:
		return st.Warning.Render("stop the check? (y/N)")
	case d.err != nil:
		return st.Error.Render(d.err.Error())
	}
	return st.Muted.Render(d.status)
}

// startCheck opens the device and streams probe samples as events; nothing
// is recorded.
func startCheck(ctx context.Context, b Backend, dev lab.DeviceInfo, durS float64, realtime bool, stream int) tea.Cmd {
	return func() tea.Msg {
		if b.Lab.Open == nil {
			return runStartedMsg{stream: stream, err: fmt.Errorf("no device backend")}
		}
		d, err := b.Lab.Open(ctx, dev.ID, realtime)
		if err != nil {
			return runStartedMsg{stream: stream, err: fmt.Errorf("open device %s: %w", dev.ID, err)}
		}
		pr, ok := d.(lab.Prober)
		if !ok {
			d.Close()
			return runStartedMsg{stream: stream, err: fmt.Errorf("%s cannot run the MFLOPS probe", dev.ID)}
		}
		cctx, cancel := context.WithCancel(ctx)
		out := make(chan relayItem, maxBatch)
		go func() {
			defer close(out)
			defer d.Close()
			samples := make(chan lab.ProbeSample, 64)
			done := make(chan error, 1)
			go func() {
				done <- pr.Probe(cctx, lab.ProbeOptions{DurationS: durS, IntervalS: 1, Realtime: realtime}, samples)
				close(samples)
			}()
			for s := range samples {
				s := s
				out <- relayItem{Event: lab.Event{Type: lab.EventProbe, T: s.T, Probe: &s}}
			}
			if err := <-done; err != nil && cctx.Err() == nil {
				out <- relayItem{Err: err}
			}
		}()
		return runStartedMsg{stream: stream, run: &liveRun{stream: stream, cancel: cancel, events: out, device: d.Info()}}
	}
}
