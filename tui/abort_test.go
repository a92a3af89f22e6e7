package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
)

// abortedModel is a live run aborted with ctrl+c then y (issue 29): the
// runner's last events are the interrupted trial and the end, then the
// stream closes and the final analysis comes in.
func abortedModel(t *testing.T, w, h int) *Model {
	m, _, ch, cancelled := liveModel(t, w, h)
	evs := synthEvents(12, 0, false)
	ch <- relayItem{} // lets the re-armed wait return at once
	_, cmd := m.Update(eventsArrivedMsg{stream: 1, events: evs})
	m.Update(reportFrom(t, cmd))
	press(t, m, "ctrl+c", "y")
	if !*cancelled {
		t.Fatal("ctrl+c, y did not cancel the run")
	}
	last := evs[len(evs)-1].Trial
	end := []lab.Event{
		{Type: lab.EventTrial, T: 30, Trial: &lab.Trial{Index: last.Index + 1, Round: last.Round + 1, Arm: lab.ArmControl,
			Status: lab.StatusInterrupted, Reason: "the run ended during the trial", Metrics: []lab.Metric{}}},
		{Type: lab.EventEnd, T: 30, End: &lab.End{Reason: "cancelled"}},
	}
	_, cmd = m.Update(eventsArrivedMsg{stream: 1, events: end, closed: true})
	m.Update(reportFrom(t, cmd))
	return m
}

func init() { addScene("aborted", abortedModel) }

// TestAbortShowsTheEnd: ctrl+c then y ends the run and stays on its end
// screen (the partial table, "aborted · saved PATH"); q then quits. The
// interrupted trial is not a failure (issue 29).
func TestAbortShowsTheEnd(t *testing.T) {
	m := abortedModel(t, 80, 24)
	screen := screenText(m)
	for _, want := range []string{"ended: cancelled", "startup_ms", "#26   r13  A interrupted", "(last: #7 app crashed", "aborted · saved /tmp/s.jsonl"} {
		if !strings.Contains(screen, want) {
			t.Errorf("end screen lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "2 trials failed") || strings.Contains(screen, "2 failed") {
		t.Errorf("the interrupted trial reads as a failure:\n%s", screen)
	}
	_, cmd := m.Update(keyPress("q"))
	if cmd == nil {
		t.Fatal("q on the end screen does nothing")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q on the end screen: want tea.Quit")
	}
}
