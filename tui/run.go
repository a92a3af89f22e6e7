package tui

import (
	"context"
	"errors"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/engine"
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
	// pickName lets the engine add -2, -3... to a session file name that is
	// taken (two runs in one second); a name the user gave is kept as is.
	pickName bool
	// source is the experiment file the plan came from ("" : the pickers).
	source string
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
	// saved is closed once the engine has closed the session file.
	saved <-chan struct{}
}

// relayItem is one event relayed from the engine, or a failure to record it.
type relayItem = engine.Item

// maxBatch bounds how many queued events one message carries, so a fast
// simulated device cannot starve key handling.
const maxBatch = 512

// startRun starts an engine session (device, session file, probe, runner,
// relay) and hands its stream to the dashboard.
func startRun(ctx context.Context, b Backend, p runPlan, sessionPath string, stream int) tea.Cmd {
	return func() tea.Msg {
		exp := p.exp
		exp.Device = p.device.ID
		source := p.source
		if source == "" {
			source = "workbench"
		}
		s, err := engine.Start(ctx, b.Lab, engine.Plan{
			Experiment: exp, Tool: b.Tool, Source: source,
			Path: sessionPath, FreeName: p.pickName, ProbeS: p.probeS, Realtime: p.realtime,
		})
		if err != nil {
			return runStartedMsg{stream: stream, err: err}
		}
		return runStartedMsg{stream: stream, run: &liveRun{
			stream: stream, runner: s.Runner, cancel: s.Cancel, events: s.Events,
			sessionPath: s.Path, device: s.Device, saved: s.Done(),
		}}
	}
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
	if it.Err != nil {
		m.err = errors.Join(m.err, it.Err)
	}
	if it.Event.Type != "" {
		m.events = append(m.events, it.Event)
	}
}
