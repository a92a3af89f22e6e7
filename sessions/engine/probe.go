package engine

import (
	"context"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
)

// The stability probe before the first trial, run by wrapping the device.

// probingDevice runs the MFLOPS stability check at the end of Setup, after
// the governor profile and the other controls are applied and before the
// first trial, recording the samples as probe events and sending them to
// the relay as they come. The channel is unbuffered, so every sample is
// written and taken by the relay when Setup returns: the session file and
// the views get probe samples before trials. Only the first Setup probes.
type probingDevice struct {
	lab.Device
	probe   lab.ProbeOptions
	rec     *recorder
	samples chan<- Item
	once    sync.Once
}

// ReportsTrialStart passes on the device's answer (lab.TrialStartReporter),
// so that a run with a stability check keeps the late hand-off of trial
// events.
func (p *probingDevice) ReportsTrialStart() bool {
	r, ok := p.Device.(lab.TrialStartReporter)
	return ok && r.ReportsTrialStart()
}

// probingReconnector keeps the device's Reconnector for the runner, beside
// the TrialStartReporter answer probingDevice passes on (the optional
// interfaces the runner asks a device for).
type probingReconnector struct {
	*probingDevice
	lab.Reconnector
}

func withProbe(dev lab.Device, probe lab.ProbeOptions, rec *recorder, samples chan<- Item) lab.Device {
	p := &probingDevice{Device: dev, probe: probe, rec: rec, samples: samples}
	if rc, ok := dev.(lab.Reconnector); ok {
		return probingReconnector{p, rc}
	}
	return p
}

func (p *probingDevice) Setup(ctx context.Context, exp *lab.Experiment) ([]lab.Event, error) {
	first := false
	p.once.Do(func() { first = true })
	if !first { // a Setup after a reconnect: the check ran before the first trial
		return p.Device.Setup(ctx, exp)
	}
	defer close(p.samples)
	evs, err := p.Device.Setup(ctx, exp)
	if err != nil || p.probe.DurationS <= 0 {
		return evs, err
	}
	pr, ok := p.Device.(lab.Prober)
	if !ok {
		return append(evs, note("stability check skipped: this device cannot run the MFLOPS probe")), nil
	}
	in := make(chan lab.ProbeSample)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range in {
			ev := lab.Event{Type: lab.EventProbe, T: time.Since(p.rec.start).Seconds(), Probe: &s}
			p.samples <- Item{Event: ev, Err: p.rec.write(ev)}
		}
	}()
	err = pr.Probe(ctx, p.probe, in)
	close(in)
	<-done
	if err != nil && ctx.Err() == nil {
		evs = append(evs, note("stability check failed: "+err.Error()))
	}
	return evs, nil
}

func note(text string) lab.Event {
	return lab.Event{Type: lab.EventNote, Note: &lab.Note{Text: text}}
}
