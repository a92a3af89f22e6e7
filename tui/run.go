package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	// realtime paces a simulated device at wall-clock speed, so the run can
	// be watched and steered; otherwise it runs in simulated time.
	realtime bool
	// pickName lets startRun add -2, -3... to a session file name that is
	// taken (two runs in one second); a name the user gave is kept as is.
	pickName bool
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
	// saved is closed once the relay has closed the session file.
	saved chan struct{}
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
		dev, err := b.OpenDevice(ctx, p.device.ID, p.realtime)
		if err != nil {
			return runStartedMsg{err: fmt.Errorf("open device %s: %w", p.device.ID, err)}
		}
		info := dev.Info()
		exp := p.exp
		exp.Device = info.ID
		if p.pickName {
			sessionPath = freeName(sessionPath)
		}
		w, err := b.CreateSession(sessionPath, info, &exp)
		if err != nil {
			dev.Close()
			return runStartedMsg{err: fmt.Errorf("create session %s: %w", sessionPath, err)}
		}
		rctx, cancel := context.WithCancel(ctx)
		samples := make(chan lab.ProbeSample) // unbuffered: see probingDevice
		probe := lab.ProbeOptions{DurationS: p.probeS, IntervalS: 1, Realtime: p.realtime}
		r := b.NewRunner(withProbe(dev, probe, samples), &exp)
		out := make(chan relayItem, maxBatch)
		saved := make(chan struct{})
		go func() {
			defer close(saved)
			relay(rctx, dev, r, w, samples, out)
		}()
		return runStartedMsg{run: &liveRun{
			stream: stream, runner: r, cancel: cancel, events: out,
			sessionPath: sessionPath, device: info, saved: saved,
		}}
	}
}

// freeName returns path, or path with -2, -3... before its extension when
// a file of that name exists.
func freeName(path string) string {
	ext := filepath.Ext(path)
	base := strings.TrimSuffix(path, ext)
	for i := 2; ; i++ {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return path
		}
		path = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
}

// probingDevice runs the MFLOPS stability check at the end of Setup, after
// the governor profile and the other controls are applied and before the
// first trial, sending the samples to the relay as they come. The channel
// is unbuffered, so every sample has been taken by the relay when Setup
// returns and the session keeps probe samples before trials.
type probingDevice struct {
	lab.Device
	probe   lab.ProbeOptions
	samples chan<- lab.ProbeSample
	once    sync.Once
}

// probingReconnector keeps the device's Reconnector for the runner.
type probingReconnector struct {
	*probingDevice
	lab.Reconnector
}

func withProbe(dev lab.Device, probe lab.ProbeOptions, samples chan<- lab.ProbeSample) lab.Device {
	p := &probingDevice{Device: dev, probe: probe, samples: samples}
	if rc, ok := dev.(lab.Reconnector); ok {
		return probingReconnector{p, rc}
	}
	return p
}

func (p *probingDevice) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	defer p.once.Do(func() { close(p.samples) })
	evs, err := p.Device.Setup(ctx, exp)
	if err != nil {
		return evs, err
	}
	pr, ok := p.Device.(lab.Prober)
	if !ok || p.probe.DurationS <= 0 {
		return evs, nil
	}
	if err := pr.Probe(ctx, p.probe, p.samples); err != nil && ctx.Err() == nil {
		evs = append(evs, lab.Event{Type: lab.EventNote, Note: &lab.Note{Text: "stability check failed: " + err.Error()}})
	}
	return evs, nil
}

// relay writes every event of the run, and the stability probe's samples
// as probe events, to the session before passing it on. It closes out when
// the runner's stream ends, after closing the session file and the device.
func relay(ctx context.Context, dev lab.Device, r Runner, w SessionWriter, samples <-chan lab.ProbeSample, out chan<- relayItem) {
	defer close(out)
	send := func(ev lab.Event) {
		err := w.Write(ev)
		if err != nil {
			err = fmt.Errorf("session write: %w", err)
		}
		out <- relayItem{ev: ev, err: err}
	}
	start := time.Now() // the runner's clock starts with Run, just below
	events := r.Run(ctx)
	for events != nil {
		select {
		case s, ok := <-samples:
			if !ok {
				samples = nil
				continue
			}
			send(lab.Event{Type: lab.EventProbe, T: time.Since(start).Seconds(), Probe: &s})
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			send(ev)
		}
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
