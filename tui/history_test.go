package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
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
			Steps:  []HistoryStep{{Index: 6, DeltaPct: 3.1, P: 1e-5}},
			Alerts: []HistoryAlert{{Index: 6, Confirmed: true, FirstBad: "cg", Text: "confirmed: +3.0% [+2.4%, +3.6%]", Session: "/s/confirm.jsonl"}}},
		{Device: "sim:pixel", Metric: "frame_ms", Unit: "ms", Values: []float64{16, 16.1, 15.9}, Builds: builds[:3]},
	}
}

// TestHistoryViewGolden renders the history screen at 100×30: the series
// list, the chart with its step and confirmed alert marked under the
// seventh build, the step and the alert listed.
func TestHistoryViewGolden(t *testing.T) {
	v := NewHistoryView(NewStyles(true, true), historySeriesForTest(), 0)
	v.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	got := ansi.Strip(v.Render())
	checkGolden(t, "history-100x30", got)
	if !strings.Contains(got, "! alert at cg (#6): confirmed: +3.0% [+2.4%, +3.6%], first bad cg") || !strings.Contains(got, "^ step at cg (#6): +3.10%") {
		t.Errorf("history view:\n%s", got)
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
	v.Update(tea.KeyPressMsg{Code: tea.KeyDown})
	if v.Selected() != 1 {
		t.Fatalf("down: selected %d", v.Selected())
	}
	if _, cmd := v.Update(tea.KeyPressMsg{Code: tea.KeyEnter}); cmd != nil || v.Open != "" {
		t.Errorf("enter without alerts: open %q", v.Open)
	}
	if !strings.Contains(v.Render(), "no change point") {
		t.Errorf("a short series:\n%s", v.Render())
	}
	empty := NewHistoryView(NewStyles(true, true), nil, 0)
	if !strings.Contains(empty.Render(), "no series yet") {
		t.Errorf("empty history:\n%s", empty.Render())
	}
}
