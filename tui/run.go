package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// runPlan is everything the pickers decided: where, what, and how.
type runPlan struct {
	device lab.DeviceInfo
	exp    lab.Experiment
	// probeS is the length, in device seconds, of the MFLOPS stability check
	// run before the first trial; 0 skips it.
	probeS float64
}

// liveRun is a run in progress: the runner's live controls, the relay's
// output and the session file it writes.
type liveRun struct {
	stream      int
	runner      Runner
	cancel      context.CancelFunc
	events      <-chan relayItem
	sessionPath string
	device      lab.DeviceInfo
}

// relayItem is one event relayed from the runner, or a failure to record it.
type relayItem struct {
	ev  lab.Event
	err error
}

// maxBatch bounds how many queued events one message carries, so a fast
// simulated device cannot starve key handling.
const maxBatch = 512

// startRun opens the device, creates the session file and starts the runner
// with a relay that records every event before the UI sees it.
func startRun(ctx context.Context, b Backend, p runPlan, sessionPath string, stream int) tea.Cmd {
	return func() tea.Msg {
		if b.OpenDevice == nil || b.NewRunner == nil || b.CreateSession == nil {
			return runStartedMsg{err: errors.New("this build of perflab cannot run trials (no lab backend)")}
		}
		dev, err := b.OpenDevice(ctx, p.device.ID)
		if err != nil {
			return runStartedMsg{err: fmt.Errorf("open device %s: %w", p.device.ID, err)}
		}
		info := dev.Info()
		exp := p.exp
		exp.Device = info.ID
		w, err := b.CreateSession(sessionPath, info, &exp)
		if err != nil {
			dev.Close()
			return runStartedMsg{err: fmt.Errorf("create session %s: %w", sessionPath, err)}
		}
		rctx, cancel := context.WithCancel(ctx)
		r := b.NewRunner(dev, &exp)
		out := make(chan relayItem, maxBatch)
		go relay(rctx, dev, r, w, p.probeS, out)
		return runStartedMsg{run: &liveRun{
			stream: stream, runner: r, cancel: cancel, events: out,
			sessionPath: sessionPath, device: info,
		}}
	}
}

// relay runs the optional stability probe, then the runner, writing every
// event to the session before passing it on. It closes out when the runner's
// stream ends, after closing the session file.
func relay(ctx context.Context, dev lab.Device, r Runner, w SessionWriter, probeS float64, out chan<- relayItem) {
	defer close(out)
	start := time.Now()
	send := func(ev lab.Event) {
		err := w.Write(ev)
		if err != nil {
			err = fmt.Errorf("session write: %w", err)
		}
		out <- relayItem{ev: ev, err: err}
	}
	offset := 0.0
	if pr, ok := dev.(lab.Prober); ok && probeS > 0 && ctx.Err() == nil {
		samples := make(chan lab.ProbeSample, 64)
		done := make(chan error, 1)
		go func() {
			done <- pr.Probe(ctx, lab.ProbeOptions{DurationS: probeS, IntervalS: 1}, samples)
			close(samples)
		}()
		for s := range samples {
			s := s
			send(lab.Event{Type: lab.EventProbe, T: time.Since(start).Seconds(), Probe: &s})
		}
		if err := <-done; err != nil && ctx.Err() == nil {
			out <- relayItem{err: fmt.Errorf("stability check: %w", err)}
		}
		offset = time.Since(start).Seconds()
	}
	for ev := range r.Run(ctx) {
		ev.T += offset
		send(ev)
	}
	if err := w.Close(); err != nil {
		out <- relayItem{err: fmt.Errorf("close session: %w", err)}
	}
	dev.Close()
}

// waitForEvents reads at least one item from ch, then whatever else is
// already queued (up to maxBatch), and reports them as one message.
func waitForEvents(stream int, ch <-chan relayItem) tea.Cmd {
	return func() tea.Msg {
		msg := eventsArrivedMsg{stream: stream}
		it, ok := <-ch
		if !ok {
			msg.closed = true
			return msg
		}
		msg.add(it)
		for len(msg.events) < maxBatch {
			select {
			case it, ok := <-ch:
				if !ok {
					msg.closed = true
					return msg
				}
				msg.add(it)
			default:
				return msg
			}
		}
		return msg
	}
}

func (m *eventsArrivedMsg) add(it relayItem) {
	if it.err != nil {
		m.err = errors.Join(m.err, it.err)
	}
	if it.ev.Type != "" {
		m.events = append(m.events, it.ev)
	}
}
