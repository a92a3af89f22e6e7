package tui

import (
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// toggleAsked is a live run with counted trials in its one regime after
// o: the y/N line says what the toggle will do to the analysis before it
// is sent (issue 29: a toggle set the verdict so far aside unannounced).
func toggleAsked(t *testing.T, w, h int) *Model {
	m, _, ch, _ := liveModel(t, w, h)
	evs := synthEvents(3, 0, false) // the order toggle at round 1 joins regime 1: nothing counted before it
	ch <- relayItem{}
	_, cmd := m.Update(eventsArrivedMsg{stream: 1, events: evs})
	m.Update(reportFrom(t, cmd))
	press(t, m, "o")
	return m
}

func init() { addScene("toggle-ask", toggleAsked) }

// TestToggleAsksFirst: o and c with counted trials in the current regime
// ask y/N with the regime they start; n sends nothing, y sends it; with
// nothing counted yet they act at once.
func TestToggleAsksFirst(t *testing.T) {
	m := toggleAsked(t, 80, 24)
	fr := m.dash.run.runner.(*fakeRunner)
	const ask = "order random starts regime 2: the verdict will use its rounds only (y/N)"
	if !strings.Contains(screenText(m), ask) {
		t.Fatalf("o did not ask %q:\n%s", ask, screenText(m))
	}
	if fr.Calls() != "" {
		t.Fatalf("o sent %q before the answer", fr.Calls())
	}
	press(t, m, "n")
	if fr.Calls() != "" || !strings.Contains(screenText(m), "not changed: order random") {
		t.Errorf("n: calls %q, screen:\n%s", fr.Calls(), screenText(m))
	}
	press(t, m, "o", "y")
	if fr.Calls() != "order random" || !strings.Contains(screenText(m), "order random from the next round: regime 2") {
		t.Errorf("o, y: calls %q, screen:\n%s", fr.Calls(), screenText(m))
	}
	press(t, m, "c", "space", "enter")
	if !strings.Contains(screenText(m), "controls change starts regime 2: the verdict will use its rounds only (y/N)") {
		t.Errorf("c did not ask:\n%s", screenText(m))
	}
	press(t, m, "y")
	if want := "order random; controls kill_app"; fr.Calls() != want {
		t.Errorf("calls %q, want %q", fr.Calls(), want)
	}
	press(t, m, "c", "enter")
	if fr.Calls() != "order random; controls kill_app" || !strings.Contains(screenText(m), "controls unchanged") {
		t.Errorf("an unchanged c: calls %q, screen:\n%s", fr.Calls(), screenText(m))
	}
}

// TestToggleBeforeCountedTrials: with no counted trial yet in the regime
// (the warm-up round), a toggle costs nothing and is sent at once.
func TestToggleBeforeCountedTrials(t *testing.T) {
	m, fr, ch, _ := liveModel(t, 80, 24)
	ch <- relayItem{}
	evs := synthEvents(3, 0, false)
	var warm []lab.Event
	for _, e := range evs {
		if e.Type != lab.EventTrial || e.Trial.Warmup {
			warm = append(warm, e)
		}
		if e.Type == lab.EventToggle {
			break
		}
	}
	m.Update(eventsArrivedMsg{stream: 1, events: warm})
	press(t, m, "o")
	if fr.Calls() == "" || strings.Contains(screenText(m), "(y/N)") {
		t.Errorf("o asked before any counted trial: calls %q\n%s", fr.Calls(), screenText(m))
	}
}
