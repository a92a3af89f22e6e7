package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/perflab/perflab/internal/gittest"
	"github.com/perflab/perflab/sessions/bisect"
)

// writeRange writes a sim range file of n builds with a step of pct% at
// build at (no step when at < 0).
func writeRange(t *testing.T, n, at int, pct float64) string {
	t.Helper()
	var builds []map[string]any
	for i := range n {
		b := map[string]any{"name": "v" + string(rune('a'+i)), "app": "feed"}
		if at >= 0 && i >= at {
			b["effect_pct"] = pct
		}
		builds = append(builds, b)
	}
	exp := map[string]any{"device": "sim:pixel", "order": "random", "seed": 5, "threshold": 0.5, "metrics": []string{"startup_ms"},
		"controls": map[string]any{"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
			"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true},
		"builds": builds}
	data, _ := json.Marshal(exp)
	path := filepath.Join(t.TempDir(), "range.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBisectCommandSim(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "b.json")
	stdout, stderr, code := studyCmd(t, "bisect", writeRange(t, 8, 5, 3), "--json", "--dir", dir, "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := lastLine(t, stdout)
	want := []string{"ci_high_pct", "ci_low_pct", "comparisons", "delta_pct", "first_bad", "other_steps", "outcome", "trials_total"}
	if got := keys(m); !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	fb := m["first_bad"].(map[string]any)
	if fb["index"] != 5.0 || fb["name"] != "vf" {
		t.Errorf("first_bad %v, want index 5 vf", fb)
	}
	if c := m["comparisons"].([]any)[0].(map[string]any); c["a"] != 0.0 || c["b"] != 7.0 || c["verdict"] != "regression" {
		t.Errorf("first comparison %v, want the ends 0 → 7, regression", c)
	}
	if !strings.Contains(stderr, "ends: 0 va → 7 vh: regression") {
		t.Errorf("no progress line for the ends on stderr:\n%s", stderr)
	}
	// --show prints the saved file again, as a table and as the JSON line.
	shown, _, code := studyCmd(t, "bisect", "--show", out)
	if code != exitOK || !strings.Contains(shown, "first bad: build 5, vf") {
		t.Errorf("--show: exit %d\n%s", code, shown)
	}
	line, _, _ := studyCmd(t, "bisect", "--show", out, "--json")
	if strings.TrimSpace(line) != strings.TrimSpace(stdout) {
		t.Errorf("--show --json\n%s\nwant\n%s", line, stdout)
	}
	// report and replay read it too; report --json gives the same line.
	if rep, _, code := studyCmd(t, "report", out, "--json"); code != exitOK || strings.TrimSpace(rep) != strings.TrimSpace(stdout) {
		t.Errorf("report --json of the bisect: exit %d\n%s", code, rep)
	}
	if rep, _, code := studyCmd(t, "replay", out, "--headless"); code != exitOK || rep != shown {
		t.Errorf("replay of the bisect: exit %d\n%s", code, rep)
	}
	// Each comparison's session is a regular session.
	rec, err := bisect.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	sess := rec.Comparisons[len(rec.Comparisons)-1].Sessions[0]
	if rep, errOut, code := studyCmd(t, "report", sess); code == exitError || !strings.Contains(rep, "startup_ms") {
		t.Errorf("report of a comparison's session: exit %d\n%s\n%s", code, rep, errOut)
	}
}

func TestBisectCommandEndsDoNotDiffer(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := studyCmd(t, "bisect", writeRange(t, 4, -1, 0), "--json", "--dir", dir, "--out", filepath.Join(dir, "b.json"), "--quiet")
	if code != exitRegression {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	if m := lastLine(t, stdout); m["first_bad"] != nil || m["outcome"] != "ends do not differ" {
		t.Errorf("result %v", m)
	}
}

func TestBisectCommandUsage(t *testing.T) {
	r := writeRange(t, 3, 1, 3)
	for _, args := range [][]string{
		{"bisect"},
		{"bisect", r, r},
		{"bisect", r, "--git", "."},
		{"bisect", "--good", "HEAD"},
		{"bisect", "--git", ".", "--good", "HEAD~1"},
		{"bisect", "--git", ".", "--good", "HEAD~1", "--bad", "HEAD"},
		{"bisect", "--git", ".", "--good", "HEAD~1", "--bad", "HEAD", "--run", "x", "--apk", "{out}/a.apk"},
		{"bisect", "--show", "x.json", r},
		{"bisect", r, "--max-trials", "1", "--dir", t.TempDir()},
		{"bisect", "--bogus"},
	} {
		if _, stderr, code := studyCmd(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, stderr)
		}
	}
	if out, _, code := studyCmd(t, "bisect", "--help"); code != exitOK || !strings.Contains(out, "Pinpoint") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"builds": [{"app": "feed"}, {"app": "feed", "effect_pct": -200}]}`), 0o644)
	if _, stderr, code := studyCmd(t, "bisect", bad); code != exitError || !strings.Contains(stderr, "builds[1].effect_pct") {
		t.Errorf("bad build: exit %d\n%s", code, stderr)
	}
}

// TestBisectCommandGit bisects a repository the test creates: a program
// whose work grows at one commit, reporting the work it did as a metric
// (deterministic, with a little variation by trial), so no verdict rests
// on this host's clock.
func TestBisectCommandGit(t *testing.T) {
	r := gittest.New(t)
	repo := r.Dir
	const culprit = 4
	for i := range 7 {
		work := 1000
		if i >= culprit {
			work = 1100 // 10% more work from this commit on
		}
		// work.sh prints the work its loop did: N plus a little noise from
		// the trial number.
		script := "n=0; i=0; while [ $i -lt " + itoa(work) + " ]; do i=$((i+1)); n=$((n+1)); done\n" +
			"echo \"PERFLAB_METRIC work=$((n * 100 + PERFLAB_TRIAL % 7))\"\n"
		r.Commit("commit "+itoa(i), map[string]string{"work.sh": script, "n.txt": itoa(i)})
	}
	dir := t.TempDir()
	cache := t.TempDir()
	args := []string{"bisect", "--git", repo, "--good", "HEAD~6", "--bad", "HEAD", "--cache", cache,
		"--build", `cp work.sh "$PERFLAB_OUT/work.sh" && echo "$PERFLAB_REV" > "$PERFLAB_OUT/rev"`,
		"--run", "sh {out}/work.sh", "--json", "--dir", dir, "--out", filepath.Join(dir, "b.json"), "--max-trials", "20", "--metric", "work"}
	stdout, stderr, code := studyCmd(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	m := lastLine(t, stdout)
	fb := m["first_bad"].(map[string]any)
	if fb["index"] != float64(culprit) || !strings.HasSuffix(fb["name"].(string), "commit "+itoa(culprit)) || len(fb["rev"].(string)) != 40 {
		t.Errorf("first_bad %v, want commit %d", fb, culprit)
	}
	// Each built commit was built once, into its own output directory.
	built, _ := filepath.Glob(filepath.Join(cache, "*", "built"))
	if len(built) < 3 || len(built) > 7 {
		t.Errorf("%d commits built, want the few the search needed", len(built))
	}
	for _, b := range built {
		rev, err := os.ReadFile(filepath.Join(filepath.Dir(b), "out", "rev"))
		if err != nil || strings.TrimSpace(string(rev)) != filepath.Base(filepath.Dir(b)) {
			t.Errorf("%s: $PERFLAB_OUT/rev %q, %v", b, rev, err)
		}
	}
	// A second run reuses the builds: a failing --build is never run.
	args[10] = "exit 1"
	if stdout, stderr, code := studyCmd(t, args...); code != exitOK {
		t.Fatalf("cached rerun: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestBisectScreen checks when perflab bisect shows its screen.
func TestBisectScreen(t *testing.T) {
	tests := []struct {
		name                             string
		tuiFlag, headless, asJSON, quiet bool
		terminal                         bool
		want                             bool
		refused                          bool
	}{
		{name: "terminal by default", terminal: true, want: true},
		{name: "pipe by default", terminal: false, want: false},
		{name: "headless on a terminal", headless: true, terminal: true, want: false},
		{name: "json on a terminal", asJSON: true, terminal: true, want: false},
		{name: "quiet on a terminal", quiet: true, terminal: true, want: false},
		{name: "tui asked", tuiFlag: true, terminal: false, want: true},
		{name: "tui and headless", tuiFlag: true, headless: true, terminal: true, refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := bisectScreen(tt.tuiFlag, tt.headless, tt.asJSON, tt.quiet, tt.terminal)
			if (msg != "") != tt.refused || (!tt.refused && got != tt.want) {
				t.Errorf("bisectScreen = %v, %q; want %v, refused %v", got, msg, tt.want, tt.refused)
			}
		})
	}
}
