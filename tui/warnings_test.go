package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// TestStabilityWarningAsReport: the dashboard's stability warning is the
// one report, replay --headless and run --headless give for the session
// (sessions.SetupWarnings), first among the warnings (issue 29).
func TestStabilityWarningAsReport(t *testing.T) {
	evs := synthEvents(30, 10, true)
	m := sized(NewReplay(Options{Now: fixedNow}, simInfo(), synthPlan(30), evs, 10, nil), 80, 24)
	press(t, m, "G")
	want := sessions.SetupWarnings(evs)
	if len(want) != 1 || !strings.HasPrefix(want[0], "stability check: unstable: ") {
		t.Fatalf("setup warnings %q, want the stability check's", want)
	}
	if got := m.replay.warnings(); len(got) == 0 || got[0] != want[0] {
		t.Errorf("dashboard warnings %q, want %q first", got, want[0])
	}
	if !strings.Contains(screenText(m), "⚠ stability check: unstable: ") {
		t.Errorf("screen lacks the stability warning:\n%s", screenText(m))
	}
}

// TestTruncateKeepsNumbersWhole: a line cut at the screen's edge drops a
// number it would cut in two (issue 29: "cluster 0 1766 → 168…").
func TestTruncateKeepsNumbersWhole(t *testing.T) {
	check := func(s string, w int, want string) {
		t.Helper()
		if got := truncate(s, w); got != want {
			t.Errorf("truncate(%q, %d) = %q, want %q", s, w, got, want)
		}
	}
	line := "⚠ throttling, first at t=27s: cluster 0 1766 → 1689 MHz"
	check(line, 50, "⚠ throttling, first at t=27s: cluster 0 1766 → …")
	check(line, 49, "⚠ throttling, first at t=27s: cluster 0 1766 → …")
	check(line, 47, "⚠ throttling, first at t=27s: cluster 0 1766 →…")
	check(line, 44, "⚠ throttling, first at t=27s: cluster 0 …")
	check("12345678901234567890", 10, "123456789…") // a number that is the line: cut it
	check(line, 80, line)
}

// TestSavedStatusSaysPathOnce: the end's status names the session's path
// (under the home directory as ~/...) and leaves the keys to the help line
// (issue 29: "saved … · q q…").
func TestSavedStatusSaysPathOnce(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	if got := homePath(filepath.Join(home, ".local/share/perflab/sessions/s.jsonl")); got != "~/.local/share/perflab/sessions/s.jsonl" {
		t.Errorf("homePath = %q", got)
	}
	if got := homePath("/tmp/s.jsonl"); got != "/tmp/s.jsonl" {
		t.Errorf("homePath = %q", got)
	}
	l := liveStream{run: &liveRun{stream: 1, cancel: func() {}, sessionPath: filepath.Join(home, "s.jsonl")}}
	l.arrived(eventsArrivedMsg{stream: 1, closed: true}, func([]lab.Event) tea.Cmd { return nil }, func() tea.Cmd { return nil })
	if l.status != "saved ~/s.jsonl" {
		t.Errorf("status %q, want %q", l.status, "saved ~/s.jsonl")
	}
}
