package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/internal/gittest"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/history"
)

// hangWait only catches a hang: a watch on the simulated phone takes
// seconds, a race-built one on a loaded machine longer.
const hangWait = 10 * time.Minute

// simRepo makes a repository of n commits, each writing perflab-sim.json;
// commit i (1-based) has the effect effect(i) in %.
func simRepo(t *testing.T, n int, effect func(i int) float64) *gittest.Repo {
	t.Helper()
	r := gittest.New(t)
	for i := 1; i <= n; i++ {
		r.Commit(fmt.Sprintf("commit %d", i), map[string]string{SimFile: fmt.Sprintf(`{"app": "feed", "effect_pct": %g}`, effect(i)), "n": fmt.Sprint(i)})
	}
	return r
}

// simExperiment writes a watch experiment on sim:pixel with every control
// on and returns it loaded.
func simExperiment(t *testing.T, trials int, seed int64) Loaded {
	t.Helper()
	path := filepath.Join(t.TempDir(), "watch.json")
	doc := fmt.Sprintf(`{"device": "sim:pixel", "order": "random", "seed": %d, "trials": %d, "warmup": 1, "metrics": ["startup_ms"],
		"controls": {"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
		"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true}}`, seed, trials)
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := LoadExperiment(path)
	if err != nil {
		t.Fatal(err)
	}
	return *l
}

func newWatcher(t *testing.T, ctx context.Context, repo string, l Loaded, db *history.DB) *Watcher {
	t.Helper()
	w, err := New(ctx, Config{Repo: repo, Since: "HEAD~" + fmt.Sprint(countCommits(t, repo)-1), Loaded: l, History: db,
		Lab: bisect.SimLab(), Dir: t.TempDir(), Cache: t.TempDir(), Tool: "test", Source: "test", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func countCommits(t *testing.T, repo string) int {
	t.Helper()
	w := &Watcher{cfg: Config{Repo: repo}}
	c, err := w.commit(context.Background(), "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	return c.Seq
}

func openDB(t *testing.T) *history.DB {
	t.Helper()
	db, err := history.Open(context.Background(), filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestWatchFindsConfirmsAndBisects(t *testing.T) {
	tests := []struct {
		name      string
		effect    func(i int) float64
		firstBad  int // 1-based commit, 0: no confirmed alert
		confirmed bool
	}{
		{"step at commit 7", func(i int) float64 {
			if i >= 7 {
				return 4
			}
			return 0
		}, 7, true},
		{"A/A", func(int) float64 { return 0 }, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hangWait)
			defer cancel()
			repo := simRepo(t, 12, tt.effect)
			db := openDB(t)
			w := newWatcher(t, ctx, repo.Dir, simExperiment(t, 10, 5), db)
			r, err := w.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r.Commits != 11 || len(r.Recorded) != 11 {
				t.Fatalf("commits %d, recorded %d; want 11 after the first", r.Commits, len(r.Recorded))
			}
			var confirmed []history.Alert
			for _, a := range r.Alerts {
				if a.Confirmed {
					confirmed = append(confirmed, a)
				}
			}
			if !tt.confirmed {
				if len(confirmed) > 0 {
					t.Fatalf("A/A: confirmed alerts %+v", confirmed)
				}
				return
			}
			if len(confirmed) != 1 || !confirmed[0].Regression() {
				t.Fatalf("alerts %+v; want one confirmed regression", r.Alerts)
			}
			want := revOf(t, repo.Dir, tt.firstBad)
			if confirmed[0].FirstBad != want {
				t.Errorf("first bad %s, want commit %d %s", confirmed[0].FirstBad, tt.firstBad, want)
			}
			// The alert reaches the first bad commit's author.
			if au := confirmed[0].Author; au == nil || au.Name != "t" || au.Email != "t@t" || au.Subject != fmt.Sprintf("commit %d", tt.firstBad) {
				t.Errorf("author %+v, want t <t@t>: commit %d", au, tt.firstBad)
			}
			if md := NewReport("r", "e", "h", confirmed).Markdown(); !strings.Contains(md, "t &lt;t@t&gt;: commit 7") {
				t.Errorf("markdown names no author:\n%s", md)
			}
			if confirmed[0].Verdict != analysis.VerdictRegression || !(confirmed[0].CILowPct > 0) || len(confirmed[0].Sessions) == 0 {
				t.Errorf("confirmation %+v", confirmed[0])
			}
			// A second round finds nothing to do and raises nothing new.
			r2, err := w.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(r2.Recorded) != 0 || r2.Done != 11 || len(r2.Alerts) != 0 {
				t.Errorf("second round: recorded %d, done %d, alerts %d; want 0, 11, 0", len(r2.Recorded), r2.Done, len(r2.Alerts))
			}
		})
	}
}

// revOf is the full hash of the i-th commit (1-based).
func revOf(t *testing.T, repo string, i int) string {
	t.Helper()
	w := &Watcher{cfg: Config{Repo: repo}}
	n := countCommits(t, repo)
	c, err := w.commit(context.Background(), fmt.Sprintf("HEAD~%d", n-i))
	if err != nil {
		t.Fatal(err)
	}
	return c.Rev
}

// TestWatchLinesCorrectedAcrossRange checks that each per-commit line's
// verdict is one of the range's comparisons corrected together (issue
// 34: unchanged commits were called regression and improvement at the
// plan's α each): the round states the rate, and with too few trials a
// build to reach α over the range's commits it says so and no line
// decides; with enough, the commits after a 20% step are regressions and
// those before it are not.
func TestWatchLinesCorrectedAcrossRange(t *testing.T) {
	tests := []struct {
		trials    int
		rate      string
		decisive  bool
		firstStep int // 1-based commit of the step
	}{
		{6, "at α 0.0083 with 99.17% intervals, corrected across the range's 6 commits (Bonferroni): at most 0.05 that any line calls an unchanged commit changed; steps come from the change-point detector (with 6 trials a build no line can decide: 8 would)", false, 4},
		{12, "corrected across the range's 6 commits (Bonferroni): at most 0.05 that any line calls an unchanged commit changed; steps come from the change-point detector\n", true, 4},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.trials, " trials"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), hangWait)
			defer cancel()
			repo := simRepo(t, 7, func(i int) float64 {
				if i >= tt.firstStep {
					return 20
				}
				return 0
			})
			var log strings.Builder
			w, err := New(ctx, Config{Repo: repo.Dir, Since: "HEAD~6", Loaded: simExperiment(t, tt.trials, 3), History: openDB(t),
				Lab: bisect.SimLab(), Dir: t.TempDir(), Cache: t.TempDir(), Tool: "test", Source: "test",
				Logf: func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
			out := log.String()
			if !strings.Contains(out, tt.rate) {
				t.Fatalf("no rate line %q in\n%s", tt.rate, out)
			}
			for i := 2; i <= 7; i++ {
				line := lineOf(out, fmt.Sprintf("commit %d: median", i))
				want := analysis.VerdictInconclusive
				if tt.decisive && i >= tt.firstStep {
					want = analysis.VerdictRegression
				}
				if !strings.Contains(line, ": "+want+" (") {
					t.Errorf("commit %d: want %s in %q", i, want, line)
				}
			}
		})
	}
}

// lineOf is the line of out that contains s.
func lineOf(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
