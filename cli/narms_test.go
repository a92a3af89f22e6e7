package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// threeBuildSession runs examples/sim-three-builds.json (v1, v2 +5%, v3
// −5% on the seeded simulated phone) and returns the session's path and
// run's stdout.
func threeBuildSession(t *testing.T, extra ...string) (string, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "s.jsonl")
	args := append([]string{"run", filepath.Join(pkgDir, "..", "examples", "sim-three-builds.json"), "--headless", "--quiet", "--out", out}, extra...)
	code, stdout, stderr := simCmd(t, args...)
	if code != exitRegression {
		t.Fatalf("run: exit %d, want %d (v2 regressed)\nstdout:\n%s\nstderr:\n%s", code, exitRegression, stdout, stderr)
	}
	if !strings.Contains(stderr, "counted A 20 B 20 C 20, 3 warm-up") {
		t.Errorf("closing message: %s", stderr)
	}
	return out, stdout
}

// TestRunThreeBuildsEndToEnd runs an experiment of three builds on the
// simulated phone and checks every view of it: run's table, report,
// replay, --json, --benchstat, --csv and the Markdown export, and the
// verdicts against the simulator's truth (v2 +5% a regression, v3 −5% an
// improvement).
func TestRunThreeBuildsEndToEnd(t *testing.T) {
	md := filepath.Join(t.TempDir(), "s.md")
	path, table := threeBuildSession(t, "--export-markdown", md)
	simGolden(t, "run-three-builds.golden", table)
	if !strings.Contains(table, "A: v1   B: v2 (+5%)   C: v3 (-5%)") {
		t.Errorf("builds not named in the table:\n%s", table)
	}

	code, rep, _ := simCmd(t, "report", path)
	if code != exitRegression {
		t.Errorf("report exit %d", code)
	}
	if _, body, _ := strings.Cut(rep, "\n\n"); body != table {
		t.Errorf("report's table differs from run's:\n%s\nwant:\n%s", body, table)
	}
	code, rp, _ := simCmd(t, "replay", "--headless", path)
	if code != 0 || !strings.HasSuffix(rp, table) || !strings.Contains(rp, "round 1   C") && !strings.Contains(rp, " C ") {
		t.Errorf("replay exit %d, output ends:\n%s", code, rp[max(0, len(rp)-600):])
	}

	code, js, _ := simCmd(t, "report", path, "--json")
	var doc struct {
		Inputs      []string
		Family      int
		Comparisons []struct {
			Metrics []struct {
				Name    string
				Verdict string
				Paired  *struct{ N int }
			}
		}
		Session struct {
			Counts struct{ Counted map[string]int }
		}
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || code != exitRegression {
		t.Fatalf("report --json: exit %d, %v\n%s", code, err, js)
	}
	if len(doc.Comparisons) != 2 || doc.Family != 2 || strings.Join(doc.Inputs, "|") != "v1|v2 (+5%)|v3 (-5%)" {
		t.Fatalf("report --json: inputs %q, family %d, %d comparisons", doc.Inputs, doc.Family, len(doc.Comparisons))
	}
	for j, want := range []string{"regression", "improvement"} {
		m := doc.Comparisons[j].Metrics[0]
		if m.Verdict != want || m.Paired == nil || m.Paired.N != 20 {
			t.Errorf("comparison %d: %s, paired %+v; want %s from 20 rounds", j, m.Verdict, m.Paired, want)
		}
	}
	if c := doc.Session.Counts.Counted; c["A"] != 20 || c["C"] != 20 || len(c) != 3 {
		t.Errorf("counts %v", c)
	}

	_, bs, _ := simCmd(t, "report", path, "--benchstat")
	if i, j, k := strings.Index(bs, "arm: A\n"), strings.Index(bs, "arm: B\n"), strings.Index(bs, "arm: C\n"); !(i >= 0 && i < j && j < k) {
		t.Errorf("--benchstat: arms not in base order:\n%.300s", bs)
	}
	_, csv, _ := simCmd(t, "report", path, "--csv")
	if !strings.Contains(csv, ",C,v3 (-5%),false,true,random,ok,") {
		t.Errorf("--csv: no counted row of build C:\n%.400s", csv)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	simGolden(t, "run-three-builds.md.golden", string(b))
}

// TestRunThreeCommands runs the one-liner with three shell commands and
// -n names: three builds, the first the base, each named.
func TestRunThreeCommands(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	code, stdout, stderr := simCmd(t, "run", "--headless", "--quiet", "--trials", "3", "--warmup", "0", "--out", out,
		"-n", "one", "-n", "two", "--", "true", "true", "exit 0")
	if code != exitOK && code != exitRegression {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "A: one   B: two   C: exit 0") || !strings.Contains(stderr, "counted A 3 B 3 C 3") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	many := append([]string{"run", "--headless", "--"}, strings.Fields(strings.Repeat("true ", 27))...)
	code, _, stderr = simCmd(t, many...)
	if code != exitUsage || !strings.Contains(stderr, "want 2 to 26 commands (the base first), got 27") {
		t.Errorf("27 commands: exit %d, %s", code, stderr)
	}
}

// TestStudiesRefuseThreeBuilds checks that validate and order, which
// study a control and a treatment, say so when given more builds.
func TestStudiesRefuseThreeBuilds(t *testing.T) {
	exp := filepath.Join(pkgDir, "..", "examples", "sim-three-builds.json")
	for _, cmd := range []string{"validate", "order"} {
		code, _, stderr := simCmd(t, cmd, "--experiment", exp)
		if code == 0 || !strings.Contains(stderr, cmd+" studies a control and a treatment, this experiment has 3 builds") {
			t.Errorf("%s: exit %d, stderr %s", cmd, code, stderr)
		}
	}
}
