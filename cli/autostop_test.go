package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunStopAuto runs the simulated phone with --stop auto: a 5% slower
// treatment stops early as a regression (the end event and the table say
// so, with the group-sequential method and its guarantee up to max_trials), and report --threshold re-judges the
// same session.
func TestRunStopAuto(t *testing.T) {
	exp := writeExperiment(t, map[string]any{
		"device": "sim:pixel",
		"builds": map[string]any{"control": map[string]any{"app": "feed"}, "treatment": map[string]any{"app": "feed", "effect_pct": 5}},
		"trials": 20, "warmup": 1, "order": "random", "seed": 3, "metrics": []string{"startup_ms"},
		"controls": map[string]any{"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
			"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true},
	})
	session := filepath.Join(t.TempDir(), "auto.jsonl")
	stdout, stderr, code := runPerflab(t, "run", "--headless", exp, "--out", session, "--stop", "auto", "--max-trials", "60")
	if code != 3 || !strings.Contains(stderr, "stopped: decided after") || !strings.Contains(stdout, "sequential") || !strings.Contains(stdout, "max_trials (60 rounds)") ||
		!strings.Contains(stdout, "regression") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	out, _, _ := runPerflab(t, "report", session)
	if !strings.Contains(out, "stopped: decided after") || !strings.Contains(out, "regression") {
		t.Errorf("report:\n%s", out)
	}
	out, _, _ = runPerflab(t, "report", session, "--threshold", "20%")
	if !strings.Contains(out, "threshold ±20%") || strings.Contains(out, "regression  ") {
		t.Errorf("report --threshold 20%%:\n%s", out)
	}
	_, errs, code := runPerflab(t, "run", "--headless", exp, "--stop", "sometimes")
	if code != exitError || !strings.Contains(errs, `stop: "sometimes"`) {
		t.Errorf("bad --stop: exit %d, %s", code, errs)
	}
}
