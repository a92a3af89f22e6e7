package tui

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
)

// TestBisectView feeds the bisect screen a scripted bisect of 8 builds
// and checks what it shows and that x, y aborts it.
func TestBisectView(t *testing.T) {
	cands := bisect.SimRange("feed", 8, map[int]float64{5: 2})
	cancelled := false
	v := NewBisectView(NewStyles(true, true), cands, nil, func() { cancelled = true })
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v.started = clock
	v.now = func() time.Time { clock = clock.Add(10 * time.Second); return clock }
	f := func(x float64) analysis.Float { return analysis.Float(x) }
	comp := func(a, b int, purpose, verdict string, d float64, trials int) *bisect.Comparison {
		return &bisect.Comparison{A: a, B: b, Purpose: purpose, Verdict: verdict, DeltaPct: f(d), CILowPct: f(d - 0.8),
			CIHighPct: f(d + 0.8), Trials: trials, MedianA: f(400), MedianB: f(400 * (1 + d/100)), Unit: "ms"}
	}
	trial := engine.Item{Event: lab.Event{Type: lab.EventTrial, Trial: &lab.Trial{Arm: lab.ArmControl, Status: lab.StatusOK}}}
	send := func(ev bisect.Event) { v.Update(bisectEventMsg{ev, true}) }
	send(bisect.Event{Kind: bisect.KindStart, Comparison: comp(0, 7, "ends", "unknown", math.NaN(), 0), Lo: 0, Hi: 7, Left: 6})
	send(bisect.Event{Kind: bisect.KindSession, Item: trial, Lo: 0, Hi: 7, Left: 6})
	send(bisect.Event{Kind: bisect.KindDone, Comparison: comp(0, 7, "ends", "regression", 2.1, 30), Lo: 0, Hi: 7, Left: 6, TrialsTotal: 30})
	send(bisect.Event{Kind: bisect.KindDone, Comparison: comp(0, 3, "search", "no change", 0.1, 120), Lo: 3, Hi: 7, Left: 3, TrialsTotal: 150})
	send(bisect.Event{Kind: bisect.KindStart, Comparison: comp(3, 5, "search", "unknown", math.NaN(), 0), Lo: 3, Hi: 7, Left: 3, TrialsTotal: 150})
	send(bisect.Event{Kind: bisect.KindSession, Item: trial, Lo: 3, Hi: 7, Left: 3, TrialsTotal: 151})
	send(bisect.Event{Kind: bisect.KindSession, Item: trial, Lo: 3, Hi: 7, Left: 3, TrialsTotal: 152})
	got := ansi.Strip(v.render())
	path := filepath.Join("testdata", "bisect-running.golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(path); err != nil || got != string(want) {
		t.Errorf("bisect screen differs from %s (go test ./tui -run TestBisectView -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
	for _, want := range []string{"gggA?B?b", "3 → 5  search  running: 2 counted trials", "in doubt: 3 builds", "ETA 40.0s"} {
		if !strings.Contains(got, want) {
			t.Errorf("screen lacks %q:\n%s", want, got)
		}
	}
	v.Update(keyPress("x"))
	if !strings.Contains(v.render(), "y/N") {
		t.Fatal("x does not ask to abort")
	}
	v.Update(keyPress("y"))
	if !cancelled {
		t.Error("x, y did not cancel the bisect")
	}
	v.Update(bisectEventMsg{ok: false})
	if _, cmd := v.Update(keyPress("q")); cmd == nil {
		t.Error("q after the end does not quit")
	}
}

// simBisectEvents runs examples/sim-bisect.json on the simulated phone at
// instant pace and returns every event of it, in order.
func simBisectEvents(t *testing.T) ([]bisect.Candidate, []bisect.Event) {
	t.Helper()
	exp, cands, err := bisect.LoadRange(filepath.Join("..", "examples", "sim-bisect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var evs []bisect.Event
	cfg := bisect.Config{Candidates: cands, Template: *exp, Dir: t.TempDir(), Tool: "test"}
	if _, err := bisect.Run(t.Context(), bisect.SimLab(), cfg, func(ev bisect.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatal(err)
	}
	return cands, evs
}

// drive runs the view's commands one after another (first in, first out)
// until none is left or stop says so after a message, as a program would
// but deterministically.
func drive(v *BisectView, cmd tea.Cmd, stop func(tea.Msg) bool) {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		if b, ok := msg.(tea.BatchMsg); ok {
			queue = append(queue, b...)
			continue
		}
		_, next := v.Update(msg)
		queue = append(queue, next)
		if stop(msg) {
			return
		}
	}
}

// TestBisectViewSim shows a seeded simulated bisect of 16 builds at 80×24
// in the middle of its fourth comparison: the builds' medians with their
// CIs, the live panels of the running comparison; then x, y aborts it,
// keeping what is done.
func TestBisectViewSim(t *testing.T) {
	cands, evs := simBisectEvents(t)
	ch := make(chan bisect.Event, len(evs))
	for _, ev := range evs {
		ch <- ev
	}
	close(ch)
	cancelled := false
	v := NewBisectView(NewStyles(true, true), cands, ch, func() { cancelled = true })
	clock := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v.started = clock
	v.now = func() time.Time { clock = clock.Add(10 * time.Second); return clock }
	v.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	done, counted := 0, 0
	var panelsAt []int // counted trials of the live panel after each analysis of the fourth comparison
	drive(v, v.Init(), func(msg tea.Msg) bool {
		switch msg := msg.(type) {
		case bisectEventMsg:
			if msg.ev.Kind == bisect.KindDone {
				done++
			}
			if done == 3 && msg.ev.Kind == bisect.KindSession && msg.ev.Item.Event.Trial != nil && msg.ev.Item.Event.Trial.Counted() {
				counted++
			}
		case bisectPanelMsg:
			if done == 3 && v.current != nil {
				panelsAt = append(panelsAt, v.live.panel.n)
			}
		}
		return done == 3 && counted >= 60
	})
	if v.current == nil || v.live == nil {
		t.Fatal("no comparison running after three were decided")
	}
	if len(panelsAt) < 2 || panelsAt[len(panelsAt)-1] <= panelsAt[0] {
		t.Errorf("the live panels did not follow the running comparison's trials: samples per analysis %v", panelsAt)
	}
	got := ansi.Strip(v.render())
	if lines := strings.Split(strings.TrimRight(got, "\n"), "\n"); len(lines) > 24 {
		t.Errorf("the screen has %d lines, more than 24", len(lines))
	}
	for i, l := range strings.Split(got, "\n") {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line %d is %d cells wide: %q", i+1, w, l)
		}
	}
	path := filepath.Join("testdata", "bisect-sim-80x24.golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if want, err := os.ReadFile(path); err != nil || got != string(want) {
		t.Errorf("bisect screen differs from %s (go test ./tui -run TestBisectViewSim -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
	for _, want := range []string{"median of startup_ms", "95% CI", "7 → 9 · live", "p-values"} {
		if !strings.Contains(got, want) {
			t.Errorf("screen lacks %q:\n%s", want, got)
		}
	}
	// ! opens the live comparison's warnings and log in full (issue 29);
	// esc closes it.
	v.Update(keyPress("!"))
	notes := ansi.Strip(v.render())
	checkGolden(t, "bisect-notes-80x24", notes)
	for _, want := range []string{"comparison 7 → 9", "warnings (", "settings, toggles and notes ("} {
		if !strings.Contains(notes, want) {
			t.Errorf("the bisect's notes view lacks %q:\n%s", want, notes)
		}
	}
	if lines := strings.Split(strings.TrimRight(notes, "\n"), "\n"); len(lines) > 24 {
		t.Errorf("the notes view has %d lines, more than 24", len(lines))
	}
	v.Update(keyPress("esc"))
	if ansi.Strip(v.render()) != got {
		t.Errorf("esc did not close the notes view:\n%s", ansi.Strip(v.render()))
	}
	comps := len(v.comps)
	v.Update(keyPress("x"))
	v.Update(keyPress("y"))
	if !cancelled {
		t.Fatal("x, y did not cancel the bisect")
	}
	if len(v.comps) != comps || !strings.Contains(ansi.Strip(v.render()), "comparisons done are kept") {
		t.Errorf("the abort lost the comparisons done (%d, had %d)", len(v.comps), comps)
	}
}
