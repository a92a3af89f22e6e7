package sessions

import (
	"context"
	"time"

	"github.com/perflab/perflab/lab"
)

// Replay sends events on the returned channel at their original pace
// divided by speed (2 = twice as fast); speed 0 or less sends them as fast
// as the receiver takes them. The channel is closed after the last event or
// when ctx is cancelled. Nothing is executed: events are only re-sent.
func Replay(ctx context.Context, events []lab.Event, speed float64) <-chan lab.Event {
	out := make(chan lab.Event)
	go func() {
		defer close(out)
		start := time.Now()
		var t0 float64
		if len(events) > 0 {
			t0 = events[0].T
		}
		timer := time.NewTimer(0)
		<-timer.C
		defer timer.Stop()
		for _, e := range events {
			if speed > 0 {
				due := start.Add(time.Duration((e.T - t0) / speed * float64(time.Second)))
				if wait := time.Until(due); wait > 0 {
					timer.Reset(wait)
					select {
					case <-timer.C:
					case <-ctx.Done():
						return
					}
				}
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
