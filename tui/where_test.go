package tui

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/bisect"
	"github.com/perflab/perflab/lab/engine"
	"github.com/perflab/perflab/sessions"
)

// profiledReplay replays a real profiled sim session (16 rounds; B's
// feed.decodeImage 20% slower) with its where view open.
func profiledReplay(t *testing.T, w, h int) *Model {
	t.Helper()
	exp := bisect.SimTemplate(7)
	exp.Trials, exp.Profile = 16, true
	exp.Builds = map[string]lab.Build{lab.ArmControl: {Name: "feed", App: "feed"},
		lab.ArmTreatment: {Name: "feed, decode +20%", App: "feed", Effect: &lab.FunctionEffect{Function: "feed.decodeImage", Pct: 20}}}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if _, err := engine.RunSession(context.Background(), bisect.SimLab(), engine.Plan{Experiment: exp, Path: path, Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	s, err := sessions.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m := sized(NewReplay(Options{Now: fixedNow}, s.Header.Device, s.Header.Plan, s.Events, 10, nil), w, h)
	m.SetReplayPath(path)
	press(t, m, "G", "w")
	return m
}

// TestWhereView: the where view of a profiled session lists the slowed
// function first as a regression with its interval, its caller, the
// phase filter narrows it, and w closes it; its golden is at 80×24.
func TestWhereView(t *testing.T) {
	m := profiledReplay(t, 80, 24)
	got := screenText(m)
	lines := strings.Split(got, "\n")
	if !strings.Contains(lines[2], "where the time went · self · all phases · 16 rounds") ||
		!strings.HasPrefix(lines[3], "▸ feed.decodeImage") || !strings.Contains(lines[3], "regression") ||
		!strings.Contains(got, "callers: feed.image.run") {
		t.Errorf("where view:\n%s", got)
	}
	// The golden skips the progress line: its elapsed time is the real
	// run's, which a loaded host stretches.
	checkGolden(t, "where-80x24", strings.Join(append(lines[:1:1], lines[2:]...), "\n"))
	press(t, m, "f")
	if got := screenText(m); !strings.Contains(got, "phase first_frame") || strings.Contains(got, "libc.read") {
		t.Errorf("phase first_frame:\n%s", got)
	}
	press(t, m, "w")
	if got := screenText(m); strings.Contains(got, "where the time went") || !strings.Contains(got, "p-values") {
		t.Errorf("closed:\n%s", got)
	}
	// esc closes it too; ! swaps it for the notes view.
	press(t, m, "w", "esc")
	if got := screenText(m); strings.Contains(got, "where the time went") {
		t.Errorf("esc did not close the where view:\n%s", got)
	}
	press(t, m, "w", "!")
	if got := screenText(m); strings.Contains(got, "where the time went") || !strings.Contains(got, "warnings & notes in full") {
		t.Errorf("! over the where view:\n%s", got)
	}
}
