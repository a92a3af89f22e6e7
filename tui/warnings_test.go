package tui

import (
	"strings"
	"testing"

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
