package tui

import (
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// TestEndLogSaysWhyItStopped: a run with "stop": "auto" ends with the
// sequential decision in the event log.
func TestEndLogSaysWhyItStopped(t *testing.T) {
	s := newRunState(simInfo(), synthPlan(10))
	s.apply(lab.Event{Type: lab.EventEnd, T: 3, End: &lab.End{Reason: "completed",
		Stop: "decided after 6 rounds: startup_ms regression"}})
	if n := len(s.log); n == 0 || !strings.Contains(s.log[n-1], "end: completed; stopped: decided after 6 rounds: startup_ms regression") {
		t.Errorf("log %q", s.log)
	}
}
