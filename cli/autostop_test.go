package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
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

// TestStopReasonIsReportVerdict builds sessions that stopped by each rule
// of "stop": "auto" (regression, improvement, no change, the cap) and
// checks that perflab report gives the metric the run stopped on exactly
// the verdict of the stop reason (issue 25: eight runs of a +3% regression
// stopped "regression" and their reports said "inconclusive", the
// constant bytes_written having taken half of alpha). The experiments list
// no metrics, as the README's first example, so the primary is the first
// metric the trials report, and bytes_written, a constant, is no member of
// the family.
func TestStopReasonIsReportVerdict(t *testing.T) {
	stopped := regexp.MustCompile(`stopped: decided after \d+ rounds: (\S+) (regression|improvement|no change) \(`)
	capped := regexp.MustCompile(`stopped: max_trials \(\d+ per arm\) reached without a decision on (\S+): (inconclusive)`)
	cases := []struct {
		name      string
		effect    float64
		threshold float64
		cap       int
		seeds     []int
		primary   string
		want      string
	}{
		{"regression", 3, 0.5, 200, []int{101, 102, 103, 104, 105, 106, 107, 108}, "", "regression"},
		{"improvement", -3, 0.5, 200, []int{201, 202}, "", "improvement"},
		{"no change", 0, 3, 200, []int{301, 302}, "", "no change"},
		{"cap", 0.4, 0.2, 8, []int{401}, "", "inconclusive"},
		{"named primary", 3, 0.5, 200, []int{501}, "startup_ms", "regression"},
	}
	for _, c := range cases {
		for _, seed := range c.seeds {
			t.Run(fmt.Sprintf("%s/%d", c.name, seed), func(t *testing.T) {
				exp := map[string]any{
					"device": "sim:pixel",
					"builds": map[string]any{"control": map[string]any{"app": "feed"},
						"treatment": map[string]any{"app": "feed", "effect_pct": c.effect}},
					"stop": "auto", "max_trials": c.cap, "threshold": c.threshold, "seed": seed, "order": "random", "warmup": 1,
					"controls": map[string]any{"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
						"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true},
				}
				if c.primary != "" {
					exp["metrics"], exp["primary"] = []string{"bytes_written", c.primary}, c.primary
				}
				session := filepath.Join(t.TempDir(), "s.jsonl")
				_, stderr, code := runPerflab(t, "run", "--headless", writeExperiment(t, exp), "--out", session)
				m := stopped.FindStringSubmatch(stderr)
				if m == nil {
					m = capped.FindStringSubmatch(stderr)
				}
				if m == nil || m[2] != c.want {
					t.Fatalf("exit %d, stop reason %q, want %s\n%s", code, m, c.want, stderr)
				}
				out, _, _ := runPerflab(t, "report", session, "--json")
				r := decodeReport(t, out)
				found := false
				for _, mr := range r.Metrics {
					if mr.Name == m[1] {
						found = true
						if mr.Verdict != m[2] {
							t.Errorf("stopped on %s %s, report says %s", m[1], m[2], mr.Verdict)
						}
					}
				}
				if !found {
					t.Errorf("the report has no metric %s", m[1])
				}
				if wantExit := map[bool]int{true: 3, false: 0}[m[2] == "regression"]; code != wantExit {
					t.Errorf("exit %d, want %d", code, wantExit)
				}
			})
		}
	}
}
