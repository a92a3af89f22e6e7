package lab

import (
	"context"
	"sync"
	"testing"
	"time"
)

// handoffDevice reports its trials' start. Each trial after the first
// says it is under way (when under is set) and then waits, until the test
// lets it go, for the previous trial's event to reach the channel.
type handoffDevice struct {
	scriptDevice
	under   bool
	wait    time.Duration // how long a trial waits for its predecessor's event
	seen    chan int      // trial indexes the consumer got, in order
	proceed chan struct{} // one per trial after the first, from the test
	mu      sync.Mutex
	late    []int // trials whose predecessor had not reached the channel in time
}

func (d *handoffDevice) ReportsTrialStart() bool { return true }
func (d *handoffDevice) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	if req.Index > 0 {
		if d.under {
			req.TrialUnderWay()
		}
		select {
		case k := <-d.seen:
			if k != req.Index-1 {
				d.mu.Lock()
				d.late = append(d.late, req.Index)
				d.mu.Unlock()
			}
		case <-time.After(d.wait):
			d.mu.Lock()
			d.late = append(d.late, req.Index)
			d.mu.Unlock()
		}
	}
	return d.scriptDevice.RunTrial(ctx, req)
}

// TestHeldTrialEventReachesTheChannelOnceTheNextTrialIsUnderWay: on a
// TrialStartReporter, the runner records each trial's event at once and
// hands it on when the next trial says it is under way (within
// handOffEvery when trials come faster), in order.
func TestHeldTrialEventReachesTheChannelOnceTheNextTrialIsUnderWay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		under    bool
		wait     time.Duration
		wantLate bool
	}{
		{"calls Started", true, 2 * time.Minute, false}, // the wait only guards against a hang
		// Without the call an event waits for a later one: the device's
		// wait runs out, which shows the test can fail.
		{"never calls Started", false, 20 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &handoffDevice{under: tc.under, wait: tc.wait, seen: make(chan int, 100)}
			r := NewRunner(d, testExp(OrderAlternate, 3, 0))
			var recorded []int
			r.SetRecorder(func(e Event) {
				if e.Type == EventTrial {
					recorded = append(recorded, e.Trial.Index)
				}
			})
			var got []int
			for e := range r.Run(t.Context()) {
				if e.Type == EventTrial {
					got = append(got, e.Trial.Index)
					d.seen <- e.Trial.Index
				}
			}
			if len(got) != 6 || len(recorded) != 6 {
				t.Fatalf("channel got %v, recorder %v; want 6 trials each", got, recorded)
			}
			for i := range got {
				if got[i] != i || recorded[i] != i {
					t.Fatalf("channel got %v, recorder %v; want 0..5 in order", got, recorded)
				}
			}
			if late := len(d.late) > 0; late != tc.wantLate {
				t.Errorf("trials whose predecessor had not reached the channel: %v", d.late)
			}
		})
	}
}

// TestHeldTrialEventIsHandedOnWhenPaused: a pause at the round boundary
// hands the held trial event on, so a paused workbench shows the last
// trial.
func TestHeldTrialEventIsHandedOnWhenPaused(t *testing.T) {
	d := &handoffDevice{under: true, wait: 2 * time.Minute, seen: make(chan int, 100)}
	r := NewRunner(d, testExp(OrderAlternate, 3, 0))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Only against a hang: without the hand-off at the pause, trial 1
	// would come with the end event this cancellation brings.
	var guard sync.Mutex
	fired := false
	stop := time.AfterFunc(5*time.Minute, func() { guard.Lock(); fired = true; guard.Unlock(); cancel() })
	defer stop.Stop()
	events := r.Run(ctx)
	for e := range events {
		if e.Type == EventTrial {
			d.seen <- e.Trial.Index
			if e.Trial.Index == 0 {
				if err := r.Pause(); err != nil {
					t.Fatal(err)
				}
			}
			if e.Trial.Index == 1 {
				// The round is over and the runner paused: trial 1 came
				// without a trial 2 under way.
				guard.Lock()
				if fired {
					t.Error("trial 1 reached the channel only when the run was cancelled, not at the pause")
				}
				guard.Unlock()
				time.Sleep(100 * time.Millisecond) // a trial 2 would have started by now
				d.mu.Lock()
				n := len(d.reqs)
				d.mu.Unlock()
				if n != 2 {
					t.Errorf("%d trials ran before the pause took hold, want 2", n)
				}
				cancel()
			}
		}
	}
}

// startReporter is a scriptDevice whose trials say they are under way at
// once and then take a millisecond.
type startReporter struct{ scriptDevice }

func (d *startReporter) ReportsTrialStart() bool { return true }
func (d *startReporter) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	req.TrialUnderWay()
	time.Sleep(time.Millisecond)
	return d.scriptDevice.RunTrial(ctx, req)
}

// TestSetHandOffEverySpacesHandOffs: with an hour between hand-offs, the
// first trial's event goes on when the second starts and every later one
// waits for the end, all recorded when made. (With the default, 10 ms,
// the 100 ms of trials go on in several batches: the test fails.)
func TestSetHandOffEverySpacesHandOffs(t *testing.T) {
	d := &startReporter{}
	r := NewRunner(d, testExp(OrderAlternate, 50, 0))
	r.SetHandOffEvery(time.Hour)
	var mu sync.Mutex
	recorded := 0
	r.SetRecorder(func(e Event) {
		if e.Type == EventTrial {
			mu.Lock()
			recorded++
			mu.Unlock()
		}
	})
	var atReceipt []int // trials recorded when each trial event arrived
	for e := range r.Run(t.Context()) {
		if e.Type == EventTrial {
			mu.Lock()
			atReceipt = append(atReceipt, recorded)
			mu.Unlock()
		}
	}
	if len(atReceipt) != 100 {
		t.Fatalf("got %d trial events, want 100", len(atReceipt))
	}
	for i, n := range atReceipt[1:] {
		if n != 100 {
			t.Fatalf("trial %d reached the channel when %d trials were recorded; with an hour between hand-offs it waits for the end (all 100)", i+1, n)
		}
	}
}
