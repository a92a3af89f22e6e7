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
	"strconv"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/watch"
)

func main() {
	seeds := flag.Int("seeds", 10, "repositories per case")
	trials := flag.Int("trials", 10, "trials per build in each commit's session")
	step := flag.Float64("step", 2, "the regression in %")
	n := flag.Int("commits", 30, "commits after the base")
	aaOnly := flag.Bool("aa", false, "A/A ranges only")
	flag.Parse()
	fmt.Printf("%d commits, step %g%%, %d trials a build, sim:pixel, every control on\n", *n, *step, *trials)
	var found, aaClean int
	var trialsStep, trialsAA int
	var aaLines, stepLines lineCount
	for s := 1; s <= *seeds; s++ {
		if !*aaOnly {
			rng := rand.New(rand.NewPCG(uint64(s), 30))
			at := 8 + rng.IntN(16)
			ok, tr, lc, msg := one(int64(s), *n, at, *step, *trials)
			trialsStep += tr
			stepLines.add(lc)
			if ok {
				found++
			}
			fmt.Printf("seed %2d  step at commit %2d: %s (%d trials)\n", s, at, msg, tr)
		}
		ok, tr, lc, msg := one(int64(s)+1000, *n, -1, 0, *trials)
		trialsAA += tr
		aaLines.add(lc)
		if ok {
			aaClean++
		}
		fmt.Printf("seed %2d  A/A: %s (%d trials)\n", s, msg, tr)
	}
	fmt.Println()
	if !*aaOnly {
		fmt.Printf("step named by bisect: %d of %d; trials per repository: %d\n", found, *seeds, trialsStep / *seeds)
		fmt.Printf("step ranges, per-commit lines: corrected: %s; uncorrected: %s\n", stepLines.step(true), stepLines.step(false))
	}
	fmt.Printf("A/A without a confirmed alert: %d of %d; trials per repository: %d\n", aaClean, *seeds, trialsAA / *seeds)
	fmt.Printf("A/A ranges, per-commit lines saying changed: corrected: %s; uncorrected: %s\n", aaLines.aa(true), aaLines.aa(false))
}

// lineCount counts per-commit lines that say regression or improvement,
// [0] as printed (corrected across the range), [1] at the plan's α.
type lineCount struct {
	ranges          int
	lines           int    // per-commit lines
	changedBefore   [2]int // lines before the step (all lines in A/A) saying changed
	rangesAnyBefore [2]int // ranges with at least one such line
	after           int    // lines at or after the step
	changedAfter    [2]int // of those, saying regression
}

func (c *lineCount) add(o lineCount) {
	c.ranges += o.ranges
	c.lines += o.lines
	c.after += o.after
	for k := range 2 {
		c.changedBefore[k] += o.changedBefore[k]
		c.rangesAnyBefore[k] += o.rangesAnyBefore[k]
		c.changedAfter[k] += o.changedAfter[k]
	}
}

func idx(corrected bool) int {
	if corrected {
		return 0
	}
	return 1
}

func (c lineCount) aa(corrected bool) string {
	k := idx(corrected)
	return fmt.Sprintf("%d of %d lines, %d of %d ranges with any", c.changedBefore[k], c.lines, c.rangesAnyBefore[k], c.ranges)
}

func (c lineCount) step(corrected bool) string {
	k := idx(corrected)
	return fmt.Sprintf("after the step %d of %d say regression; before it %d of %d say changed (%d of %d ranges with any)",
		c.changedAfter[k], c.after, c.changedBefore[k], c.lines-c.after, c.rangesAnyBefore[k], c.ranges)
}

// countLines reads every session of the range again: the verdict each
// line printed (the range's correction) and the one the session alone
// gives at its plan's α. at is the 1-based commit of the step (< 0: A/A).
func countLines(sess string, revs []string, at, commits int) lineCount {
	lc := lineCount{ranges: 1}
	files, _ := filepath.Glob(filepath.Join(sess, "*.jsonl"))
	seq := map[string]int{}
	for i, r := range revs {
		seq[r] = i
	}
	var any [2]bool
	for _, f := range files {
		s, err := sessions.Load(f)
		if err != nil {
			continue
		}
		plan := &s.Header.Plan
		tb, ok := plan.Builds[lab.ArmTreatment]
		// Watch's own sessions name the build "short subject"; the
		// confirmations and bisects compare two commits, not the
		// reference, and are not per-commit lines.
		if !ok || !strings.HasPrefix(plan.Builds[lab.ArmControl].Name, revs[0][:7]) {
			continue
		}
		i := commitIndex(tb.Name)
		if i <= 0 {
			continue
		}
		lc.lines++
		inputs := sessions.MetricInputs(s.Events)
		for k, opt := range []analysis.Options{engine.Options(plan).Across(commits), engine.Options(plan)} {
			m := analysis.Compare(inputs, opt).Metrics[0]
			changed := m.Verdict == analysis.VerdictRegression || m.Verdict == analysis.VerdictImprovement
			if at >= 0 && i >= at {
				if k == 0 {
					lc.after++
				}
				if m.Verdict == analysis.VerdictRegression {
					lc.changedAfter[k]++
				}
				continue
			}
			if changed {
				lc.changedBefore[k]++
				any[k] = true
			}
		}
	}
	for k := range 2 {
		if any[k] {
			lc.rangesAnyBefore[k]++
		}
	}
	return lc
}

// commitIndex is i of a build named "SHORT commit i", else 0.
func commitIndex(name string) int {
	_, after, ok := strings.Cut(name, " commit ")
	if !ok {
		return 0
	}
	i, _ := strconv.Atoi(after)
	return i
}

// one watches one generated repository; at < 0 is an A/A one. ok is
// success: the step's commit named (or, A/A, no confirmed alert).
func one(seed int64, n, at int, step float64, trials int) (ok bool, trialCount int, lc lineCount, msg string) {
	dir, err := os.MkdirTemp("", "watch_study")
	if err != nil {
		return false, 0, lc, err.Error()
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
		return false, 0, lc, err.Error()
	}
	ctx := context.Background()
	db, err := history.Open(ctx, filepath.Join(dir, "history.db"))
	if err != nil {
		return false, 0, lc, err.Error()
	}
	defer db.Close()
	sess := filepath.Join(dir, "sessions")
	w, err := watch.New(ctx, watch.Config{Repo: repo, Since: revs[0], Loaded: *l, History: db, Lab: bisect.SimLab(),
		Dir: sess, Cache: filepath.Join(dir, "cache"), Tool: "watch_study", Source: expFile})
	if err != nil {
		return false, 0, lc, err.Error()
	}
	r, err := w.Run(ctx)
	if err != nil {
		return false, 0, lc, err.Error()
	}
	trialCount = countTrials(sess)
	lc = countLines(sess, revs, at, n)
	var confirmed []history.Alert
	for _, a := range r.Alerts {
		if a.Confirmed {
			confirmed = append(confirmed, a)
		}
	}
	msg = fmt.Sprintf("recorded %d, %d alerts, %d confirmed", len(r.Recorded), len(r.Alerts), len(confirmed))
	if len(r.Recorded) != n {
		return false, trialCount, lc, msg + ": not all recorded"
	}
	if at < 0 {
		return len(confirmed) == 0, trialCount, lc, msg
	}
	for _, a := range confirmed {
		if a.Regression() && a.FirstBad == revs[at] {
			return len(confirmed) == 1, trialCount, lc, msg + ", first bad = the step's commit"
		}
		msg += fmt.Sprintf(", first bad %.7s (the step is %.7s)", a.FirstBad, revs[at])
	}
	return false, trialCount, lc, msg
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
