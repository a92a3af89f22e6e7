package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
)

// notesReplay is the replay scene at its end with ! pressed: every
// warning and log line in full (issue 29: at 80×24 the panels cut them
// and showed "… 1 more warnings", and no key opened them).
func notesReplay(t *testing.T, w, h int) *Model {
	evs := synthEvents(30, 10, true)
	m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), synthPlan(30), evs, 10, nil), w, h)
	press(t, m, "G", "!")
	return m
}

func init() { addScene("notes", notesReplay) }

// TestNotesShowEveryWarningInFull: ! opens every warning the panels cut,
// whole (wrapped, not cut), and the log; ! or esc closes it.
func TestNotesShowEveryWarningInFull(t *testing.T) {
	m := notesReplay(t, 80, 24)
	warn := m.replay.warnings()
	if len(warn) < 4 {
		t.Fatalf("the scene has %d warnings, want more than the panels show (3)", len(warn))
	}
	// Unwrap the screen: each warning's words, in order, as one text.
	words := strings.Join(strings.Fields(screenText(m)), " ")
	for _, w := range warn {
		if !strings.Contains(words, strings.Join(strings.Fields(w), " ")) {
			t.Errorf("the notes view lacks the warning %q:\n%s", w, screenText(m))
		}
	}
	for _, l := range m.replay.state.log {
		if !strings.Contains(words, strings.Join(strings.Fields(l), " ")) {
			t.Errorf("the notes view lacks the log line %q", l)
		}
	}
	lines := strings.Split(screenText(m), "\n")
	if body := strings.Join(lines[:len(lines)-1], "\n"); strings.Contains(body, "…") { // the help bar is cut
		t.Errorf("the notes view cuts a line:\n%s", body)
	}
	for _, k := range []string{"!", "esc"} {
		press(t, m, k)
		if m.replay.notes.open || strings.Contains(screenText(m), "warnings & notes in full ·") {
			t.Errorf("%s did not close the notes view", k)
		}
		if k == "!" {
			press(t, m, "!")
		}
	}
	// The panels' overflow line says which key shows the rest.
	if !strings.Contains(screenText(m), "… 1 more warning · ! shows all") {
		t.Errorf("the panels do not point to the notes view:\n%s", screenText(m))
	}
}

// TestNotesScroll: a log longer than the screen scrolls with ↓ and pgdn
// in the notes view (a bubbles viewport), and the dashboard's own keys
// (space: play) still act.
func TestNotesScroll(t *testing.T) {
	evs := synthEvents(30, 10, true)
	for i := range 40 {
		evs = append(evs[:len(evs)-1], lab.Event{Type: lab.EventNote, T: evs[len(evs)-1].T, Note: &lab.Note{Text: fmt.Sprintf("note number %d", i)}}, evs[len(evs)-1])
	}
	m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), synthPlan(30), evs, 10, nil), 80, 24)
	press(t, m, "G", "!")
	top := screenText(m)
	if !strings.Contains(top, "warnings (") || strings.Contains(top, "note number 39") {
		t.Fatalf("the notes view does not open at its top:\n%s", top)
	}
	press(t, m, "down")
	if got := screenText(m); got == top || strings.Contains(got, "\nwarnings (") {
		t.Errorf("↓ did not scroll:\n%s", got)
	}
	press(t, m, "pgdown", "pgdown", "pgdown")
	if got := screenText(m); !strings.Contains(got, "note number 39") || !strings.Contains(got, "end: completed") {
		t.Errorf("pgdn did not reach the end of the log:\n%s", got)
	}
}

// TestNotesOnTheEndScreen: the end screen of an aborted run opens its
// warnings and log with !, and its help bar says so.
func TestNotesOnTheEndScreen(t *testing.T) {
	m := abortedModel(t, 80, 24)
	if !strings.Contains(screenText(m), "! warnings & notes in full") {
		t.Errorf("the end screen's help bar lacks !:\n%s", screenText(m))
	}
	press(t, m, "!")
	got := strings.Join(strings.Fields(screenText(m)), " ")
	for _, want := range []string{"warnings (1)", "1 trial failed or timed out, not counted (last: #7 app crashed before first frame)", "end: cancelled"} {
		if !strings.Contains(got, want) {
			t.Errorf("the end screen's notes view lacks %q:\n%s", want, got)
		}
	}
	press(t, m, "esc")
	if !strings.Contains(screenText(m), "aborted · saved /tmp/s.jsonl") || m.dash.notes.open {
		t.Errorf("esc did not go back to the end screen:\n%s", screenText(m))
	}
}

// TestNotesInHelp: ? lists the notes view's key on the live dashboard.
func TestNotesInHelp(t *testing.T) {
	m, _, _, _ := liveModel(t, 80, 24)
	press(t, m, "?")
	if !strings.Contains(screenText(m), "! warnings & notes in full") {
		t.Errorf("? does not list !:\n%s", screenText(m))
	}
}
