package tui

import (
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// toggledSimSession loads ../cli/testdata/sim-effect.jsonl (20 rounds on
// the simulated phone, seed 7, B 3% slower) and toggles tmpfs at round 11
// with a note, the treatment 9% slower from there on: two regimes of
// 10+10 counted trials whose Δ intervals do not overlap.
func toggledSimSession(t *testing.T) *sessions.Session {
	t.Helper()
	s, err := sessions.Load("../cli/testdata/sim-effect.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	on := s.Header.Plan.Controls
	off := on
	off.Tmpfs = !on.Tmpfs
	var evs []lab.Event
	toggled := false
	for _, e := range s.Events {
		if e.Type == lab.EventTrial && e.Trial != nil && e.Trial.Round >= 11 {
			if !toggled {
				toggled = true
				for _, tg := range lab.DiffControls(on, off) {
					tg.Round = 11
					evs = append(evs, lab.Event{Type: lab.EventToggle, T: e.T, Toggle: &tg})
				}
				evs = append(evs, lab.Event{Type: lab.EventNote, T: e.T, Note: &lab.Note{Text: "tmpfs flipped"}})
			}
			if e.Trial.Arm == lab.ArmTreatment {
				tr := *e.Trial
				tr.Metrics = append([]lab.Metric(nil), tr.Metrics...)
				for i := range tr.Metrics {
					tr.Metrics[i].Value *= 1.09
				}
				e.Trial = &tr
			}
		}
		evs = append(evs, e)
	}
	if !toggled {
		t.Fatal("no round 11 in the test session")
	}
	s.Events = evs
	return s
}

// TestReplayPanelsRegimes: replaying a session with a controls toggle
// mid-run, the panels analyse regime 1 while regime 2 has fewer than
// sessions.MinRegimeTrials trials per arm, then the latest; they list the
// regimes with the toggle and the note, say which is analysed and why,
// and warn that the regimes differ.
func TestReplayPanelsRegimes(t *testing.T) {
	s := toggledSimSession(t)
	m := sized(NewReplay(Options{Now: fixedNow}, s.Header.Device, s.Header.Plan, s.Events, 10, nil), 80, 24)
	press(t, m, "space") // pause
	// Step up to the second counted trial of regime 2 (round 11).
	for m.replay.rp.pos < len(m.replay.rp.events) {
		press(t, m, ".")
		if e := m.replay.rp.events[m.replay.rp.pos-1]; e.Trial != nil && e.Trial.Round == 11 && e.Trial.Arm == lab.ArmTreatment {
			break
		}
	}
	pd := m.replay.panel
	if len(pd.regimes) != 2 || pd.regimePick != 0 || !strings.Contains(pd.regimeWhy, "regime 1 of 2") {
		t.Fatalf("early in regime 2: %d regimes, pick %d, %q; want regime 1 analysed", len(pd.regimes), pd.regimePick, pd.regimeWhy)
	}
	press(t, m, "G")
	pd = m.replay.panel
	if len(pd.regimes) != 2 || pd.regimePick != 1 {
		t.Fatalf("at the end: %d regimes, pick %d; want regime 2", len(pd.regimes), pd.regimePick)
	}
	for _, mp := range pd.metrics {
		if mp.nA != 10 || mp.nB != 10 {
			t.Errorf("%s: n %d/%d, want regime 2's 10/10", mp.name, mp.nA, mp.nB)
		}
	}
	scr := screenText(m)
	for _, want := range []string{"analysed: regime 2 of 2 (the latest with at least 5 trials per arm)",
		"1 r0–10 10 rounds · ▸2 r11– 10 rounds · tmpfs", "· note: tmpfs flipped", "the toggle changed the answer: regime 1"} {
		if !strings.Contains(scr, want) {
			t.Errorf("screen lacks %q:\n%s", want, scr)
		}
	}
	for i, l := range strings.Split(scr, "\n") {
		if w := len([]rune(l)); w > 80 {
			t.Errorf("line %d is %d cells wide: %q", i+1, w, l)
		}
	}
}
