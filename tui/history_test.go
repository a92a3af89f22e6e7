package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

func historySeriesForTest() []HistorySeries {
	vals := []float64{100, 101, 99, 100, 100.5, 99.5, 103, 104, 102.5, 103, 103.5, 102.8}
	builds := make([]string, len(vals))
	sessions := make([]string, len(vals))
	for i := range vals {
		builds[i] = "c" + string(rune('a'+i))
		sessions[i] = "/s/" + builds[i] + ".jsonl"
	}
	return []HistorySeries{
		{Device: "sim:pixel", Metric: "startup_ms", Unit: "ms", Values: vals, Builds: builds, Sessions: sessions,
			Steps: []HistoryStep{{Index: 6, DeltaPct: 3.1, P: 1e-5}},
			Alerts: []HistoryAlert{{ID: 2, Index: 6, Confirmed: true, FirstBad: "cg", Text: "alert 2 confirmed regression +3.0% [+2.4%, +3.6%]",
				Session: "/s/confirm.jsonl", Bisect: "/s/bisect.json"}}},
		{Device: "sim:pixel", Metric: "frame_ms", Unit: "ms", Values: []float64{16, 16.1, 15.9}, Builds: builds[:3]},
		{Device: "Pixel 3", Metric: "rss_mb", Values: []float64{80, 81, 80}, Builds: builds[:3]},
	}
}

// historyAt80x24 is the history with a flat series first, as a history
// lists them, the one with the alert after it.
func historyAt80x24() []HistorySeries {
	s := historySeriesForTest()
	return []HistorySeries{s[1], s[0], s[2]}
}

// TestHistoryViewGolden renders the history screen at 80×24 and
// 100×30: it opens on the series of the newest alert, not the first; the
// series list whole (no unit in parentheses when there is none), the
// chart with its step and confirmed alert marked under the seventh build
// and the commits on the axis, the step and the whole alert line
// (Δ, interval, first bad) wrapped, all within the screen.
func TestHistoryViewGolden(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {100, 30}} {
		v := NewHistoryView(NewStyles(true, true), historyAt80x24(), -1)
		v.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		got := ansi.Strip(v.Render())
		checkGolden(t, fmt.Sprintf("history-%dx%d", size[0], size[1]), got)
		lines := strings.Split(got, "\n")
		if len(lines) > size[1] {
			t.Errorf("%dx%d: %d lines", size[0], size[1], len(lines))
		}
		for _, l := range lines {
			if w := lipgloss.Width(l); w > size[0] {
				t.Errorf("%dx%d: a line of %d columns: %q", size[0], size[1], w, l)
			}
		}
		flat := strings.Join(strings.Fields(got), " ")
		for _, want := range []string{"▸ ! startup_ms (ms) · sim:pixel · 12 builds", "rss_mb · Pixel 3", "^ step at cg (#6): +3.10%",
			"> ! alert 2 confirmed regression +3.0% [+2.4%, +3.6%] at cg (#6), first bad cg", "ca cg cl"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%dx%d: no %q in\n%s", size[0], size[1], want, got)
			}
		}
		if strings.Contains(got, "()") {
			t.Errorf("%dx%d: an empty unit shown\n%s", size[0], size[1], got)
		}
	}
}

// TestHistoryViewKeys: down selects the next series, enter on an alert
// quits with its session to open, and a series without alerts opens
// nothing.
func TestHistoryViewKeys(t *testing.T) {
	v := NewHistoryView(NewStyles(true, true), historySeriesForTest(), 0)
	if _, cmd := v.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd == nil || v.Open != "/s/confirm.jsonl" {
		t.Fatalf("enter on the alert: open %q", v.Open)
	}
	v = NewHistoryView(NewStyles(true, true), historySeriesForTest(), 0)
	if _, cmd := v.Update(tea.KeyPressMsg{Code: 'b', Text: "b"}); cmd == nil || v.Open != "/s/bisect.json" {
		t.Fatalf("b on the alert: open %q", v.Open)
	}
	v = NewHistoryView(NewStyles(true, true), historySeriesForTest(), 0)
	v.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	if v.Selected() != 1 {
		t.Fatalf("down: selected %d", v.Selected())
	}
	if _, cmd := v.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd != nil || v.Open != "" || !strings.Contains(v.Render(), "this series has no alert to open") {
		t.Errorf("enter without alerts: open %q\n%s", v.Open, v.Render())
	}
	if !strings.Contains(v.Render(), "no change point") {
		t.Errorf("a short series:\n%s", v.Render())
	}
	empty := NewHistoryView(NewStyles(true, true), nil, 0)
	if !strings.Contains(empty.Render(), "no series yet") {
		t.Errorf("empty history:\n%s", empty.Render())
	}
}
