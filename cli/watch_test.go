package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/internal/gittest"
	"github.com/perflab/perflab/lab/devlock"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/watch"
)

// watchRepo makes a repository of 12 commits writing perflab-sim.json,
// the 7th and later 4% slower, and returns it with its commits' hashes.
func watchRepo(t *testing.T) (*gittest.Repo, []string) {
	t.Helper()
	r := gittest.New(t)
	for i := 1; i <= 12; i++ {
		eff := 0
		if i >= 7 {
			eff = 4
		}
		r.Commit(fmt.Sprintf("commit %d", i), map[string]string{watch.SimFile: fmt.Sprintf(`{"app": "feed", "effect_pct": %d}`, eff), "n": fmt.Sprint(i)})
	}
	out, err := gitOutput(r.Dir, "git", "log", "--reverse", "--format=%H")
	if err != nil {
		t.Fatal(err)
	}
	return r, strings.Fields(out)
}

func gitOutput(dir string, name string, args ...string) (string, error) {
	cmd := osexec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return string(out), err
}

// watchSetup writes the experiment and gives the data folder to the test.
func watchSetup(t *testing.T) (exp, db, sessDir string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	exp = filepath.Join(dir, "watch.json")
	doc := `{"device": "sim:pixel", "order": "random", "seed": 5, "trials": 10, "metrics": ["startup_ms"],
		"controls": {"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
		"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true}}`
	if err := os.WriteFile(exp, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return exp, filepath.Join(dir, "history.db"), filepath.Join(dir, "sessions")
}

// TestWatchCLIOnce: watch --once over 12 commits records them all, finds
// the step, confirms it, the bisect names commit 7, exit 3; the alerts
// go to the JSON and Markdown files and to the webhook; a second run has
// nothing to do (exit 0); history alerts lists the alert and mark makes
// the precision.
func TestWatchCLIOnce(t *testing.T) {
	repo, revs := watchRepo(t)
	exp, db, sessDir := watchSetup(t)
	var mu sync.Mutex
	var posted []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posted = append(posted, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	out := t.TempDir()
	jsonFile, mdFile := filepath.Join(out, "alerts.json"), filepath.Join(out, "alerts.md")
	args := []string{"watch", exp, "--git", repo.Dir, "--since", revs[0], "--once", "--history", db, "--dir", sessDir}
	code, stdout, stderr := simCmd(t, append(args, "--alerts", jsonFile, "--alerts", mdFile, "--webhook", srv.URL)...)
	if code != exitRegression {
		t.Fatalf("watch: exit %d, want 3\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "11 commits after "+revs[0]+", 11 measured now, 0 done before") {
		t.Errorf("stderr lacks the round's summary:\n%s", stderr)
	}
	var rep watch.Report
	data, err := os.ReadFile(jsonFile)
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Format != watch.ReportFormat || rep.Regressions != 1 || len(rep.Alerts) != 1 || rep.Alerts[0].FirstBad != revs[6] || !rep.Alerts[0].Confirmed {
		t.Fatalf("alerts file %s; want one confirmed regression, first bad commit 7 %s", data, revs[6])
	}
	if md, err := os.ReadFile(mdFile); err != nil || !strings.Contains(string(md), "1 confirmed regression") || !strings.Contains(string(md), revs[6][:12]) {
		t.Errorf("markdown %s: %v", md, err)
	}
	mu.Lock()
	if len(posted) != 1 || !strings.Contains(posted[0], `"format":"perflab-alerts"`) || !strings.Contains(posted[0], revs[6]) {
		t.Errorf("webhook got %q; want one post naming commit 7", posted)
	}
	mu.Unlock()

	// The history screen marks the alert under commit 7 and opens its
	// confirmation session (enter) and its bisect (b).
	series, err := historySeries(context.Background(), &historyOpts{file: db, minSegment: changepoint.DefaultMinSegment, alpha: changepoint.DefaultAlpha})
	if err != nil || len(series) != 1 || len(series[0].Alerts) != 1 {
		t.Fatalf("history screen series %+v, %v; want one with one alert", series, err)
	}
	if a := series[0].Alerts[0]; a.Index != 6 || !a.Confirmed || a.Bisect != rep.Alerts[0].Bisect || len(rep.Alerts[0].Sessions) == 0 ||
		a.Session != rep.Alerts[0].Sessions[len(rep.Alerts[0].Sessions)-1] {
		t.Errorf("history screen alert %+v; want under build 6 (commit 7), confirmed, opening %s and %v", a, rep.Alerts[0].Bisect, rep.Alerts[0].Sessions)
	}

	code, stdout, stderr = simCmd(t, args...)
	if code != exitOK || !strings.Contains(stderr, "0 measured now, 11 done before") || strings.Contains(stderr, "alert ") {
		t.Errorf("second watch: exit %d, want 0 with nothing to do\n%s%s", code, stdout, stderr)
	}

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mark", "1", "real", "--note", "commit 7"}, exitOK, "alert 1 marked real"},
		{[]string{"mark", "2", "false"}, exitError, "no alert 2"},
		{[]string{"mark", "1", "maybe"}, exitUsage, "want ALERT-ID real|false"},
		{[]string{"alerts"}, exitOK, "all alerts 1/1 = 1.00"},
		{[]string{"alerts"}, exitOK, "note on alert 1 (marked real): commit 7"},
	} {
		code, stdout, stderr := simCmd(t, append(append([]string{"history"}, tt.args...), "--history", db)...)
		if code != tt.code || !strings.Contains(stdout+stderr, tt.want) {
			t.Errorf("history %v: exit %d, want %d and %q\n%s%s", tt.args, code, tt.code, tt.want, stdout, stderr)
		}
	}
	code, stdout, _ = simCmd(t, "history", "alerts", "--json", "--history", db)
	var doc struct {
		Alerts    []history.Alert
		Precision struct{ Marked, Real int }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil || len(doc.Alerts) != 1 || doc.Alerts[0].Mark == nil ||
		!doc.Alerts[0].Mark.Real || doc.Precision.Marked != 1 || doc.Precision.Real != 1 {
		t.Errorf("alerts --json: exit %d, %v\n%s", code, err, stdout)
	}
}

// TestWatchCLIResumeAndLock: a watch stopped part-way (here: up to
// commit 6) is resumed without redoing its commits, and a device held by
// another watch is refused with the holder's pid.
func TestWatchCLIResumeAndLock(t *testing.T) {
	repo, revs := watchRepo(t)
	exp, db, sessDir := watchSetup(t)
	args := []string{"watch", exp, "--git", repo.Dir, "--since", revs[0], "--once", "--history", db, "--dir", sessDir}
	code, stdout, stderr := simCmd(t, append(args, "--branch", revs[5])...)
	if code != exitOK || !strings.Contains(stderr, "5 measured now, 0 done before") {
		t.Fatalf("first part: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = simCmd(t, args...)
	if code != exitRegression || !strings.Contains(stderr, "6 measured now, 5 done before") {
		t.Fatalf("resumed: exit %d, want 3 after measuring only the 6 new commits\n%s%s", code, stdout, stderr)
	}
	data, err := engine.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	lk, err := devlock.Take(watchLockDir(data), "sim:pixel", "a test")
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	code, _, stderr = simCmd(t, args...)
	if want := fmt.Sprintf("device sim:pixel is in use: pid %d, a test", os.Getpid()); code != exitError || !strings.Contains(stderr, want) {
		t.Errorf("locked device: exit %d, want 1 and %q\n%s", code, want, stderr)
	}
}

func TestWatchCLIUsage(t *testing.T) {
	exp, _, _ := watchSetup(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"watch"}, "want one experiment file"},
		{[]string{"watch", exp}, "want --since REV"},
		{[]string{"watch", exp, "--since", "HEAD", "--alerts", "a.txt"}, "want a .json or .md file"},
		{[]string{"watch", exp, "--since", "HEAD", "--poll", "1ms"}, "want at least 1s"},
	} {
		code, _, stderr := simCmd(t, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", tt.args, code, tt.want, stderr)
		}
	}
}

// TestWatchCLIRepositoryErrors: a folder that is no repository, a
// revision that does not exist and a commit without perflab-sim.json are
// said in perflab's words, not git's (issue 35).
func TestWatchCLIRepositoryErrors(t *testing.T) {
	exp, db, sessDir := watchSetup(t)
	plain := t.TempDir()
	bare := gittest.New(t)
	bare.Commit("one", map[string]string{"a": "1"})
	bare.Commit("two", map[string]string{"a": "2"})
	for _, tt := range []struct {
		name, dir, since, want string
	}{
		{"not a repository", plain, "HEAD~1", "is not a git repository: perflab watch follows the commits of a git checkout (--git DIR"},
		{"no such revision", bare.Dir, "nosuch", `--since nosuch: revision "nosuch" does not exist in`},
		{"too young", bare.Dir, "HEAD~5", "(HEAD has 2 first-parent commits; name a commit, tag or branch, e.g. --since HEAD~1)"},
		{"no perflab-sim.json", bare.Dir, "HEAD~1", "has no perflab-sim.json: on a simulated phone (sim:pixel) each commit's build is the perflab-sim.json it commits"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := simCmd(t, "watch", exp, "--git", tt.dir, "--since", tt.since, "--once", "--history", db, "--dir", sessDir)
			if code != exitError || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "fatal:") {
				t.Errorf("exit %d, want 1 and %q without git's words\n%s%s", code, tt.want, stdout, stderr)
			}
		})
	}
}
