package tui

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/bisect"
	"github.com/perflab/perflab/lab/engine"
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
	for _, want := range []string{"gggA?B?b", "3 → 5  search  running: 2 counted trials", "in doubt: 3 builds", "ETA 40.0s", "medians (ms): 0: 400 · 3: 400.4 · 7: 408.4"} {
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
