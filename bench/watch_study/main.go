// Command watch_study measures perflab watch end to end on the simulated
// phone (issue 30): per seed, a generated git repository of a base commit
// and 30 more, each writing perflab-sim.json, where one commit (at a
// seeded place, 8 to 23) adds a startup regression of -step %; watch
// --once over the range must record all 30, raise one confirmed
// regression and name that commit by bisect. And an A/A repository of 30
// commits (no effect anywhere) must raise no confirmed alert.
//
//	go run ./bench/watch_study -seeds 10 -trials 10 -step 2
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/watch"
)

func main() {
	seeds := flag.Int("seeds", 10, "repositories per case")
	trials := flag.Int("trials", 10, "trials per build in each commit's session")
	step := flag.Float64("step", 2, "the regression in %")
	n := flag.Int("commits", 30, "commits after the base")
	flag.Parse()
	fmt.Printf("%d commits, step %g%%, %d trials a build, sim:pixel, every control on\n", *n, *step, *trials)
	var found, aaClean int
	var trialsStep, trialsAA int
	for s := 1; s <= *seeds; s++ {
		rng := rand.New(rand.NewPCG(uint64(s), 30))
		at := 8 + rng.IntN(16)
		ok, tr, msg := one(int64(s), *n, at, *step, *trials)
		trialsStep += tr
		if ok {
			found++
		}
		fmt.Printf("seed %2d  step at commit %2d: %s (%d trials)\n", s, at, msg, tr)
		ok, tr, msg = one(int64(s)+1000, *n, -1, 0, *trials)
		trialsAA += tr
		if ok {
			aaClean++
		}
		fmt.Printf("seed %2d  A/A: %s (%d trials)\n", s, msg, tr)
	}
	fmt.Printf("\nstep named by bisect: %d of %d; A/A without a confirmed alert: %d of %d; trials per repository: %d (step), %d (A/A)\n",
		found, *seeds, aaClean, *seeds, trialsStep / *seeds, trialsAA / *seeds)
}

// one watches one generated repository; at < 0 is an A/A one. ok is
// success: the step's commit named (or, A/A, no confirmed alert).
func one(seed int64, n, at int, step float64, trials int) (ok bool, trialCount int, msg string) {
	dir, err := os.MkdirTemp("", "watch_study")
	if err != nil {
		return false, 0, err.Error()
	}
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "repo")
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=s", "-c", "user.email=s@s", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			panic(fmt.Sprintf("git %v: %v", args, err))
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(repo, 0o755)
	git("init", "-q", "-b", "main")
	var revs []string
	for i := 0; i <= n; i++ {
		eff := 0.0
		if at >= 0 && i >= at {
			eff = step
		}
		os.WriteFile(filepath.Join(repo, watch.SimFile), fmt.Appendf(nil, `{"app": "feed", "effect_pct": %g}`, eff), 0o644)
		os.WriteFile(filepath.Join(repo, "n"), fmt.Append(nil, i), 0o644)
		git("add", ".")
		git("commit", "-q", "-m", fmt.Sprintf("commit %d", i))
		revs = append(revs, git("rev-parse", "HEAD"))
	}
	expFile := filepath.Join(dir, "watch.json")
	os.WriteFile(expFile, fmt.Appendf(nil, `{"device": "sim:pixel", "order": "random", "seed": %d, "trials": %d, "metrics": ["startup_ms"],
		"controls": {"governor": "recommended", "restore_snapshot": true, "kill_app": true, "dismiss_dialogs": true,
		"clock_reset": true, "proxy": "replay", "tmpfs": true, "drop_caches": true}}`, seed, trials), 0o644)
	l, err := watch.LoadExperiment(expFile)
	if err != nil {
		return false, 0, err.Error()
	}
	ctx := context.Background()
	db, err := history.Open(ctx, filepath.Join(dir, "history.db"))
	if err != nil {
		return false, 0, err.Error()
	}
	defer db.Close()
	sess := filepath.Join(dir, "sessions")
	w, err := watch.New(ctx, watch.Config{Repo: repo, Since: revs[0], Loaded: *l, History: db, Lab: bisect.SimLab(),
		Dir: sess, Cache: filepath.Join(dir, "cache"), Tool: "watch_study", Source: expFile})
	if err != nil {
		return false, 0, err.Error()
	}
	r, err := w.Run(ctx)
	if err != nil {
		return false, 0, err.Error()
	}
	trialCount = countTrials(sess)
	var confirmed []history.Alert
	for _, a := range r.Alerts {
		if a.Confirmed {
			confirmed = append(confirmed, a)
		}
	}
	msg = fmt.Sprintf("recorded %d, %d alerts, %d confirmed", len(r.Recorded), len(r.Alerts), len(confirmed))
	if len(r.Recorded) != n {
		return false, trialCount, msg + ": not all recorded"
	}
	if at < 0 {
		return len(confirmed) == 0, trialCount, msg
	}
	for _, a := range confirmed {
		if a.Regression() && a.FirstBad == revs[at] {
			return len(confirmed) == 1, trialCount, msg + ", first bad = the step's commit"
		}
		msg += fmt.Sprintf(", first bad %.7s (the step is %.7s)", a.FirstBad, revs[at])
	}
	return false, trialCount, msg
}

// countTrials counts the trial lines of every session in dir.
func countTrials(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n += strings.Count(string(data), `"type":"trial"`)
	}
	return n
}
