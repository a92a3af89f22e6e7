package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// The recorder writes each event of a run to the session file where the
// runner makes it, and relay hands the events on to the views.

// recorder writes a run's events to the session file. The runner (or
// pool) calls record with each event where it is made, before the run goes
// on (lab.Recorder): a trial is on disk before the next one starts, so
// killing perflab loses at most the trial in flight, and no goroutine
// hand-off stands between two trials. The first failed write cancels the
// run (nothing more can be kept); later events are not written.
type recorder struct {
	w      Writer
	cancel context.CancelFunc
	start  time.Time // for the probe samples' times
	path   string    // the session file, beside which profiles go
	device string    // the device's ID, for the profiles' labels

	mu      sync.Mutex
	n       int // runner events recorded (or not, after a failure)
	failAt  int // 1-based number of the runner event whose write failed; 0: none
	err     error
	written sessions.Counts
}

func newRecorder(w Writer, cancel context.CancelFunc, path, device string) *recorder {
	return &recorder{w: w, cancel: cancel, start: time.Now(), written: sessions.NewCounts(), path: path, device: device}
}

// record is the runner's lab.Recorder.
func (rc *recorder) record(ev lab.Event) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.n++
	if t := ev.Trial; ev.Type == lab.EventTrial && t != nil && t.Profiled != nil {
		// The profile's file first, then the line that names it; the
		// trial is not yet handed on, so nothing else reads it.
		t.Profile = sessions.WriteTrialProfile(rc.path, t, rc.device, t.Profiled)
		t.Profiled = nil
	}
	if rc.writeLocked(ev) != nil && rc.failAt == 0 {
		rc.failAt = rc.n
	}
}

// write records an event of the engine's own (a probe sample) and returns
// the error of its write, if it failed. The probe's clock starts with the
// recorder, as the runner's does with Run, microseconds later.
func (rc *recorder) write(ev lab.Event) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.writeLocked(ev)
}

func (rc *recorder) writeLocked(ev lab.Event) error {
	if rc.err != nil {
		return nil // already reported; the run is being cancelled
	}
	if err := rc.w.Write(ev); err != nil {
		rc.err = fmt.Errorf("session write: %w", err)
		rc.cancel()
		return rc.err
	}
	if ev.Type == lab.EventTrial && ev.Trial != nil {
		rc.written.Add(ev.Trial)
	}
	return nil
}

// errAt returns the write error of the k-th runner event (1-based), if
// its write was the one that failed.
func (rc *recorder) errAt(k int) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if k == rc.failAt {
		return rc.err
	}
	return nil
}

// relay passes every event of the run on to out, the write error of the
// event whose write failed with it, and the stability probe's samples,
// recorded by probingDevice. It closes the file and then the device.
func relay(ctx context.Context, cancel context.CancelFunc, closeDev func() error, r Runner, rec *recorder, samples <-chan Item, out chan<- Item) Result {
	defer cancel()
	var res Result
	events := r.Run(ctx)
	k := 0 // runner events seen
	for events != nil {
		select {
		case it, ok := <-samples:
			if !ok {
				samples = nil
				continue
			}
			out <- it
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			k++
			if ev.Type == lab.EventEnd && ev.End != nil {
				e := *ev.End
				res.End = &e
			}
			out <- Item{Event: ev, Err: rec.errAt(k)}
		}
	}
	rec.mu.Lock()
	res.Written, res.Err = rec.written, rec.err
	rec.mu.Unlock()
	if err := rec.w.Close(); err != nil && res.Err == nil {
		res.Err = fmt.Errorf("close session: %w", err)
		out <- Item{Err: res.Err}
	}
	if err := closeDev(); err != nil {
		out <- Item{Err: fmt.Errorf("closing device: %w", err)}
	}
	return res
}
