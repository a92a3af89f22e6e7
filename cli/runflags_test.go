package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
)

// TestRunOneLiner runs two shell commands without an experiment file, as
// hyperfine does, with names, overrides and every export.
func TestRunOneLiner(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	stdout, stderr, code := runPerflab(t, "run", "--headless", "-n", "old", "-n", "new", "--trials", "4", "--warmup", "0",
		"--order", "alternate", "--threshold", "2", "--quiet", "--out", p("s.jsonl"),
		"--export-json", p("r.json"), "--export-csv", p("r.csv"), "--export-markdown", p("r.md"),
		"--", "echo PERFLAB_METRIC size=10", "echo PERFLAB_METRIC size=12")
	if code == exitError || code == exitUsage {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "A: control (old)   B: treatment (new)") || !strings.Contains(stdout, "threshold ±2%") {
		t.Errorf("table:\n%s", stdout)
	}
	s, err := sessions.Load(p("s.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	plan := s.Header.Plan
	if plan.Trials != 4 || plan.Warmup != 0 || plan.Order != lab.OrderAlternate || plan.Threshold != 2 ||
		plan.Builds[lab.ArmControl].Name != "old" || strings.Join(plan.Builds[lab.ArmTreatment].Command, " ") != "sh -c echo PERFLAB_METRIC size=12" {
		t.Errorf("plan %+v", plan)
	}
	if c := sessions.CountTrials(s.Events); c.Total != 8 {
		t.Errorf("%d trials, want 8", c.Total)
	}

	var rep struct {
		Metrics []struct{ Name, Verdict string }
		Session struct{ ID string }
	}
	data, _ := os.ReadFile(p("r.json"))
	if err := json.Unmarshal(data, &rep); err != nil || rep.Session.ID != s.Header.ID || len(rep.Metrics) == 0 {
		t.Errorf("JSON export: %v %+v", err, rep)
	}
	f, _ := os.Open(p("r.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 9 || rows[0][0] != "session" {
		t.Errorf("CSV export: %v, %d rows", err, len(rows))
	}
	md, _ := os.ReadFile(p("r.md"))
	if !strings.HasPrefix(string(md), "| metric | unit | A: control (old) median | B: treatment (new) median |") || !strings.Contains(string(md), "| size |") {
		t.Errorf("Markdown export:\n%s", md)
	}
}

func TestRunFlagErrors(t *testing.T) {
	exp := writeExperiment(t, map[string]any{
		"builds": map[string]any{"control": map[string]any{"command": []string{"true"}}, "treatment": map[string]any{"command": []string{"true"}}},
	})
	out := filepath.Join(t.TempDir(), "s.jsonl")
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{append([]string{"run", "--headless", "--"}, strings.Fields(strings.Repeat("true ", 27))...), exitUsage, "want 2 to 26 commands"},
		{[]string{"run", "--", "true", "false"}, exitUsage, "commands run with --headless"},
		{[]string{"run", exp, "--headless", "-n", "x"}, exitUsage, "-n names commands"},
		{[]string{"run", "--headless", "-n", "a", "-n", "b", "-n", "c", "--", "true", "true"}, exitUsage, "3 names (-n) for 2 commands"},
		{[]string{"run", exp, "--trials", "3"}, exitUsage, "apply with --headless"},
		// Bad values are refused before the first trial: no session.
		{[]string{"run", exp, "--headless", "--out", out, "--order", "sideways"}, exitError, `order: "sideways", want fixed, alternate or random (after the command-line flags)`},
		{[]string{"run", "--headless", "--out", out, "--trials", "-2", "--", "true", "true"}, exitError, "trials: -2"},
		{[]string{"run", "--headless", "--out", out, "--threshold", "-5", "--", "true", "true"}, exitUsage, `flag -threshold: want a percentage of at least 0 such as 2% or 0.5, got "-5"`},
		{[]string{"run", "--headless", "--out", out, "--", " ", "true"}, exitError, "command 1 (control) is empty"},
	}
	for _, c := range cases {
		_, stderr, code := runPerflab(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%q: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.stderr, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused run left %s: %v", out, err)
	}
}

func TestCommandExperimentDefaults(t *testing.T) {
	exp, err := commandExperiment([]string{"gzip -1 x", "gzip -9 x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Device != "local" || exp.Trials != lab.DefaultTrials || exp.Warmup != lab.DefaultWarmup || exp.Order != lab.DefaultOrder ||
		exp.Builds[lab.ArmControl].Name != "gzip -1 x" || exp.ArmLabel(lab.ArmTreatment) != "treatment (gzip -9 x)" {
		t.Errorf("experiment %+v", exp)
	}
}

// TestRunRefusesMetricTypoBeforeTrials: a misspelt metric stops the run
// at setup, before any trial, with a suggestion.
func TestRunRefusesMetricTypoBeforeTrials(t *testing.T) {
	for _, c := range []struct {
		exp  map[string]any
		want string
	}{
		{map[string]any{"device": "sim:pixel", "builds": map[string]any{"control": map[string]any{"app": "feed"}, "treatment": map[string]any{"app": "feed"}},
			"metrics": []string{"startup"}}, `metrics[0]: "startup" is not measured here; did you mean "startup_ms"?`},
		{map[string]any{"builds": map[string]any{"control": map[string]any{"command": []string{"true"}}, "treatment": map[string]any{"command": []string{"true"}}},
			"metrics": []string{"wall_ms", "usr_ms"}}, `metrics[1]: "usr_ms" is not measured here; did you mean "user_ms"?`},
	} {
		out := filepath.Join(t.TempDir(), "s.jsonl")
		_, stderr, code := runPerflab(t, "run", writeExperiment(t, c.exp), "--headless", "--quiet", "--out", out)
		if code != exitError || !strings.Contains(stderr, c.want) {
			t.Errorf("exit %d, want 1 with %q:\n%s", code, c.want, stderr)
		}
		if s, err := sessions.Load(out); err == nil && sessions.CountTrials(s.Events).Total != 0 {
			t.Errorf("%d trials ran before the typo was caught", sessions.CountTrials(s.Events).Total)
		}
	}
}
