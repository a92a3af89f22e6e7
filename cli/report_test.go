package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCorruptLineAndFormats(t *testing.T) {
	exp := writeExperiment(t, map[string]any{
		"builds": map[string]any{"control": map[string]any{"command": []string{"true"}}, "treatment": map[string]any{"command": []string{"true"}}},
		"trials": 5, "warmup": 0, "order": "alternate", "seed": 1,
	})
	session := filepath.Join(t.TempDir(), "s.jsonl")
	if _, stderr, code := runPerflab(t, "run", exp, "--headless", "--out", session, "--quiet"); code == 1 {
		t.Fatal(stderr)
	}
	data, _ := os.ReadFile(session)
	lines := strings.SplitAfter(string(data), "\n")
	lines[6] = "{\"type\":\"trial\",\"t\":0.1,\"trial\":{\"ind\n" // line 7, mid-trial garbage
	os.WriteFile(session, []byte(strings.Join(lines, "")), 0o644)

	stdout, stderr, code := runPerflab(t, "report", session)
	if code == 1 || !strings.Contains(stderr, session+":7: corrupt line skipped") || !strings.Contains(stdout, "9 counted") && !strings.Contains(stdout, "4 counted") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	csvOut, _, _ := runPerflab(t, "report", session, "--csv")
	if n := strings.Count(csvOut, "\n"); n != 1+9*3 { // header + 9 trials × 3 default metrics
		t.Errorf("csv has %d lines:\n%s", n, csvOut)
	}
	bench, _, _ := runPerflab(t, "report", session, "--benchstat")
	if !strings.Contains(bench, "arm: control\nBenchmarkSession/device=local 1 ") {
		t.Errorf("benchstat export:\n%s", bench)
	}
	replay, _, code := runPerflab(t, "replay", session, "--headless", "--speed", "0")
	if code != 0 || strings.Count(replay, " trial ") != 9 || !strings.Contains(replay, "end completed") {
		t.Errorf("replay exit %d:\n%s", code, replay)
	}
}
