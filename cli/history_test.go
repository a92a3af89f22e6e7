package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/sessions/history"
)

// TestHistorySimEndToEnd records twelve sessions on the simulated phone,
// each the app "feed" against one commit's build, the last six of which
// are 5% slower; imports them (twice: the second adds nothing) and finds
// the step at the first slow build.
func TestHistorySimEndToEnd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	var sessions []string
	for i := 1; i <= 12; i++ {
		effect := 0.0
		if i > 6 {
			effect = 5
		}
		exp := map[string]any{
			"device": "sim:pixel",
			"builds": map[string]any{
				"control":   map[string]any{"name": "feed", "app": "feed"},
				"treatment": map[string]any{"name": fmt.Sprintf("c%02d", i), "app": "feed", "effect_pct": effect},
			},
			"trials": 8, "warmup": 0, "order": "random", "seed": 100 + i,
			"controls": map[string]any{"governor": "recommended", "restore_snapshot": true, "kill_app": true, "clock_reset": true, "drop_caches": true},
			"metrics":  []string{"startup_ms"},
		}
		b, _ := json.Marshal(exp)
		file := filepath.Join(dir, fmt.Sprintf("c%02d.json", i))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("c%02d.jsonl", i))
		if code, _, stderr := simCmd(t, "run", file, "--headless", "--quiet", "--out", out); code != exitOK && code != exitRegression {
			t.Fatalf("run %s: exit %d\n%s", file, code, stderr)
		}
		sessions = append(sessions, out)
	}
	code, stdout, stderr := simCmd(t, append([]string{"history", "import", "--history", db}, sessions...)...)
	if code != exitOK || !strings.Contains(stdout, "12 runs and 24 rows added") {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = simCmd(t, append([]string{"history", "import", "--history", db}, sessions[:3]...)...)
	if code != exitOK || !strings.Contains(stdout, "0 runs and 0 rows added, 3 runs already there") {
		t.Errorf("second import: exit %d\n%s", code, stdout)
	}
	code, stdout, stderr = simCmd(t, "history", "changepoints", "--history", db, "--json")
	if code != exitOK {
		t.Fatalf("changepoints: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Steps []historyStep
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	// The series: feed (every session's control, once), then c01..c12.
	if len(doc.Steps) != 1 || doc.Steps[0].Build != "c07" || doc.Steps[0].Index != 7 || doc.Steps[0].Series != "Pixel 3/startup_ms" ||
		!(doc.Steps[0].DeltaPct > 3 && doc.Steps[0].DeltaPct < 7) {
		t.Errorf("steps %+v, want one at c07 (index 7) of about +5%%", doc.Steps)
	}
	code, stdout, _ = simCmd(t, "history", "export", "--csv", "--history", db)
	if lines := strings.Split(strings.TrimSpace(stdout), "\n"); code != exitOK || len(lines) != 25 ||
		!strings.HasPrefix(lines[0], "device,metric,unit,build,commit,time,control,n,median,delta_pct") {
		t.Errorf("export: exit %d, %d lines, want a header and 24 rows:\n%s", code, len(lines), stdout)
	}
}

// TestHistoryCSVGolden imports examples/history.csv (a +4% step in
// startup_ms at index 40, a spike in rss_mb) and pins the changepoints
// table.
func TestHistoryCSVGolden(t *testing.T) {
	db := filepath.Join(t.TempDir(), "history.db")
	csv := filepath.Join(pkgDir, "..", "examples", "history.csv")
	if code, _, stderr := simCmd(t, "history", "import", "--history", db, "--csv", csv, "--device", "ci-runner"); code != exitOK {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := simCmd(t, "history", "changepoints", "--history", db)
	if code != exitOK {
		t.Fatalf("changepoints: exit %d\n%s", code, stderr)
	}
	simGolden(t, "history-changepoints.stdout", strings.ReplaceAll(stdout, db, "HISTORY"))
}

func TestHistoryCLIErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("time,startup_ms\n2026-01-01,700\n2026-01-02,7OO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte("my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"history", "import", "--history", db, "--csv", bad}, exitError, bad + ":3: field startup_ms: not a number: \"7OO\""},
		{[]string{"history", "import", "--history", db, filepath.Join(dir, "missing.jsonl")}, exitError, "missing.jsonl: no such file"},
		{[]string{"history", "import", "--history", db}, exitUsage, "name session files, or --csv FILE"},
		{[]string{"history", "export", "--history", db, "--alpha", "0.1"}, exitUsage, "--alpha is not a flag of export"},
		{[]string{"history", "changepoints", "--history", db, "--min-segment", "1"}, exitUsage, "at least 2"},
		{[]string{"history", "changepoints", "--history", notDB}, exitError, notDB + ": not a perflab history"},
		{[]string{"history", "watch"}, exitUsage, `unknown subcommand "watch"`},
		{[]string{"history", "changepoints", "--history", filepath.Join(dir, "none.db")}, exitError, "no history at " + filepath.Join(dir, "none.db")},
	}
	for _, tt := range tests {
		code, _, stderr := simCmd(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("perflab %s: exit %d, stderr %q, want exit %d and %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.want)
		}
	}
	// The bad CSV added nothing.
	if _, stdout, _ := simCmd(t, "history", "export", "--history", db); strings.Count(stdout, "\n") != 1 {
		t.Errorf("after a bad import the history holds:\n%s", stdout)
	}
}

// TestPrintAlertsFits: at a terminal's width the alerts are blocks of
// lines no wider than it (commands whole, to copy); without a width, or
// when it fits, the table.
func TestPrintAlertsFits(t *testing.T) {
	a := history.Alert{ID: 3, Series: "Pixel 3/startup_ms", Rev: "09a857c36fa5aaaa", FirstBad: "09a857c36fa5aaaa", Confirmed: true,
		Verdict: analysis.VerdictRegression, DeltaPct: 1.83, CILowPct: 0.11, CIHighPct: 3.58, DetectedPct: 1.9,
		Sessions: []string{"/data/sessions/20261129-045249-22eae6.jsonl"}, Bisect: "/data/sessions/watch-bisect-09a857c.json",
		Mark: &history.Mark{Real: true, Note: "the image cache change"}}
	for _, tt := range []struct {
		width int
		want  []string
	}{
		{0, []string{"id  series", "note on alert 3 (marked real): the image cache change"}},
		{80, []string{"alert 3 · Pixel 3/startup_ms: confirmed regression +1.83% [+0.11%, +3.58%],", "  at 09a857c, first bad 09a857c, marked real: the image cache change",
			"  perflab replay /data/sessions/20261129-045249-22eae6.jsonl", "  perflab bisect --show /data/sessions/watch-bisect-09a857c.json"}},
		{400, []string{"id  series"}},
	} {
		var out bytes.Buffer
		printAlerts(&out, []history.Alert{a}, tt.width)
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("width %d: no %q in\n%s", tt.width, w, out.String())
			}
		}
		if tt.width == 80 {
			for _, l := range strings.Split(out.String(), "\n") {
				if len([]rune(l)) > 80 {
					t.Errorf("a line of %d columns: %q", len([]rune(l)), l)
				}
			}
		}
	}
}
