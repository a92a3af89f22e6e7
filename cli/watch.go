package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/devlock"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/history"
	"github.com/perflab/perflab/sessions/watch"
)

const watchUsage = `Usage: perflab watch EXPERIMENT --since REV [--once] [flags]

Follows a branch commit by commit, in a git checkout (--git DIR, default
the current folder). Each first-parent commit after --since up to --branch
(default HEAD) that the history does not hold yet for this device is built,
compared in paired rounds with the reference build (the experiment's
"builds": {"control": ...}, else the --since commit's build) under the
experiment's trials or stop rule, and recorded in the history (perflab
history export, changepoints see it). A commit that does not build is
recorded as such and skipped. A watch stopped or killed resumes where it
left off: the history says which commits are done.

After the backlog the change-point detector (perflab history
changepoints) searches the series of the experiment's first metric from
its baseline (the step of the latest alert marked real: perflab history
mark). Each step it finds that has no alert yet is re-measured: the
detector places a step within ±1 commit, so a fresh paired A/B compares the
commit before that window with the one after it (the verdict rules of
perflab run, stopping automatically). A regression or improvement
confirms the step; a regression then bisects the window (perflab bisect)
for its first bad commit. Every alert, confirmed or not, is recorded (an
unconfirmed one is not tried again): perflab history alerts lists them.

Without --once the watch polls: every --poll it runs git fetch (when the
repository has a remote; watch a remote branch with --branch origin/main)
and looks again, until Ctrl-C; a round that fails (a device gone, a
session that failed) is logged and tried again at the next poll. With
--once it does the backlog and exits, for a CI job.

A commit becomes a build by the experiment file's "watch" object:
  "watch": {"build": "make && cp app \"$PERFLAB_OUT\"/", "run": "{out}/app --bench"}
build runs (sh -c) in a git worktree of the commit with $PERFLAB_REV and
$PERFLAB_OUT set (worktrees and builds are cached, shared with perflab
bisect); run is the trial command on this host, or "apk": "{out}/app.apk"
for a phone. On a simulated phone (sim:PRESET) the commit's own
perflab-sim.json is its build, e.g. {"app": "feed", "effect_pct": 2}.

Only one watch uses a device at a time: it holds a lock file per device in
the data folder ($XDG_DATA_HOME/perflab/locks/watch); a second one is refused
with the holder's pid. A watch on local holds this host alone: runs,
checks and the workbench on local are refused while it runs, and it is
not started while one of them runs. A phone is held by whichever perflab
has it open.

Each commit's line (median, Δ and interval against the reference,
verdict) is corrected across the range's commits (Bonferroni): in a range
where nothing changed, at most alpha that any line says regression or
improvement. Over 30 commits a line needs 11 paired trials a build to
decide; with fewer, lines say inconclusive and the detector finds steps.

Alerts go out as the exit status, as --alerts files (.json, or .md for a
CI summary; the alerts raised in this run) and as a POST of the same JSON
to --webhook URL when a confirmed alert was raised (retried 3 times, then
logged; it never stops the watch).

Exit status: 0 no confirmed regression raised; 3 a confirmed regression
alert was raised in this run; 1 error; 2 usage.

Examples:
  perflab watch perf/watch.json --since v1.0 --once
  perflab watch perf/watch.json --since v1.0 --once --alerts alerts.json --alerts alerts.md
  perflab watch perf/watch.json --since main~30 --branch origin/main --poll 10m --webhook http://127.0.0.1:8080/hook
  perflab history alerts

Manual: docs/history.md

Flags:
`

// watchFlags are perflab watch's flags.
type watchFlags struct {
	since, repo, branch, history, webhook, dir, cache, device string
	once, quiet                                               bool
	poll                                                      time.Duration
	alerts                                                    repeatedFlag
	maxTrials, attempts, minSegment                           int
	alpha, minEffect                                          float64
	acc                                                       deviceAccess
}

func (f *watchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.since, "since", "", "the commit `REV` after which every first-parent commit is measured (its build is the reference unless the experiment names one)")
	fs.StringVar(&f.repo, "git", ".", "the git checkout `DIR`")
	fs.StringVar(&f.branch, "branch", "HEAD", "the branch or `REF` to follow (origin/main to follow a remote)")
	fs.BoolVar(&f.once, "once", false, "do the backlog and exit (for CI)")
	fs.StringVar(&f.history, "history", "", "the history: a `FILE`, or postgres://USER@HOST/DB for a shared one (default $PERFLAB_HISTORY, else $XDG_DATA_HOME/perflab/history.db)")
	fs.DurationVar(&f.poll, "poll", 5*time.Minute, "without --once, how often to fetch and look again")
	fs.Var(&f.alerts, "alerts", "write this run's alerts to `FILE` (.json or .md; repeatable)")
	fs.StringVar(&f.webhook, "webhook", "", "POST the alerts' JSON to `URL` when a confirmed alert is raised")
	fs.StringVar(&f.dir, "dir", "", "folder for the sessions (default: $XDG_DATA_HOME/perflab/sessions)")
	fs.StringVar(&f.cache, "cache", "", "`DIR` for the commits' worktrees and builds (default ~/.cache/perflab/bisect/REPO)")
	fs.StringVar(&f.device, "device", "", "device to run on, overriding the file's (local, sim:PRESET, adb:SERIAL)")
	fs.IntVar(&f.maxTrials, "max-trials", bisect.DefaultMaxTrials, "confirmation and bisect: counted trials per arm at most in a comparison's first session")
	fs.IntVar(&f.attempts, "attempts", bisect.DefaultAttempts, "confirmation and bisect: sessions an undecided comparison gets")
	fs.IntVar(&f.minSegment, "min-segment", changepoint.DefaultMinSegment, "detector: the fewest builds on each side of a step")
	fs.Float64Var(&f.alpha, "alpha", changepoint.DefaultAlpha, "detector: a step's p (step test under AR(1) noise, the splits searched accounted for) must be below `A`")
	fs.Float64Var(&f.minEffect, "min-effect", changepoint.DefaultMinEffect, "detector: the smallest step, in standard deviations of the noise around it (`S`; negative: any)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	f.acc.register(fs)
}

// check returns what is wrong with the arguments, or "".
func (f *watchFlags) check(pos []string) string {
	switch {
	case len(pos) != 1:
		return "want one experiment file"
	case f.since == "":
		return "want --since REV: the commit after which to measure"
	case f.poll < time.Second:
		return fmt.Sprintf("--poll %v: want at least 1s", f.poll)
	}
	if _, err := changepoint.Detect(nil, f.detect()); err != nil {
		return err.Error()
	}
	for _, a := range f.alerts {
		if err := (watch.Report{}).Check(a); err != nil {
			return err.Error()
		}
	}
	return ""
}

func (f *watchFlags) detect() changepoint.Options {
	return changepoint.Options{MinSegment: f.minSegment, Alpha: f.alpha, MinEffect: f.minEffect}
}

// logf prints the watch's log lines on stderr, each wrapped to the
// terminal's width when stderr is one.
func (f *watchFlags) logf(stderr io.Writer) func(string, ...any) {
	width := fitWidth(stderr, false)
	return func(format string, a ...any) {
		if !f.quiet {
			fmt.Fprintln(stderr, hanging(fmt.Sprintf(format, a...), width))
		}
	}
}

// cmdWatch follows a branch (sessions/watch).
func cmdWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f watchFlags
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	f.register(fs)
	pos, code, ok := parseCommandFlags(fs, args, watchUsage, stdout, stderr)
	if !ok {
		return code
	}
	if msg := f.check(pos); msg != "" {
		fmt.Fprintf(stderr, "perflab watch: %s (perflab watch --help)\n", msg)
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "perflab watch:", err)
		return exitError
	}
	loaded, err := watch.LoadExperiment(pos[0])
	if err == nil && f.device != "" {
		loaded.Experiment.SetDevices([]string{f.device})
		if err = loaded.Check(); err != nil {
			err = fmt.Errorf("--device %s: %w", f.device, err)
		}
	}
	if err != nil {
		return fail(err)
	}
	lk, err := lockWatchDevice(loaded.Experiment.Device, pos[0])
	if err != nil {
		return fail(err)
	}
	defer lk.Release()
	if devices.IsLocal(loaded.Experiment.Device) {
		// This host whole: no run started by hand shares it meanwhile
		// (they take it shared, devices.HostShare), nor is the watch
		// started while one does.
		dir, err := hostLockDir()
		if err == nil {
			var host *devlock.Lock
			if host, err = devlock.Take(dir, "local", "perflab watch "+pos[0]); err == nil {
				defer host.Release()
			}
		}
		if err != nil {
			return fail(err)
		}
	}
	db, err := openHistory(ctx, &historyOpts{file: f.history}, true)
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	if !f.acc.openOr(ctx, "perflab watch", stderr) {
		return exitError
	}
	defer f.acc.close()
	w, err := f.watcher(ctx, loaded, db, pos[0], stderr)
	if err != nil {
		return fail(err)
	}
	raised, err := f.loop(ctx, w, db, pos[0], stderr)
	if err != nil {
		return fail(err)
	}
	printAlerts(stdout, raised, fitWidth(stdout, false))
	for _, a := range raised {
		if a.Regression() {
			return exitRegression
		}
	}
	return exitOK
}

// watchLockDir is where the watches' locks are, beside the sessions
// folder dataDir: a folder of their own, apart from the devices' locks
// (hostLockDir) even where the data and state folders are one.
func watchLockDir(dataDir string) string {
	return filepath.Join(filepath.Dir(dataDir), "locks", "watch")
}

// lockWatchDevice takes the device's lock in the data folder (whatever
// --dir says: the lock is the device's, not the sessions').
func lockWatchDevice(device, experiment string) (*devlock.Lock, error) {
	dataDir, err := engine.DefaultDir()
	if err != nil {
		return nil, err
	}
	return devlock.Take(watchLockDir(dataDir), device, "perflab watch "+experiment)
}

// hostHeld is the devices' options of a watch, which holds this host
// whole when it runs on it: its sessions take no shared lock beside its
// own.
func (f *watchFlags) hostHeld() devices.Options {
	o := f.acc.options()
	o.Host = nil
	return o
}

// watcher makes the watch the flags describe.
func (f *watchFlags) watcher(ctx context.Context, loaded *watch.Loaded, db *history.DB, experiment string, stderr io.Writer) (*watch.Watcher, error) {
	sessDir := f.dir
	if sessDir == "" {
		var err error
		if sessDir, err = engine.DefaultDir(); err != nil {
			return nil, err
		}
	}
	if abs, err := filepath.Abs(f.repo); err == nil {
		f.repo = abs
	}
	return watch.New(ctx, watch.Config{Repo: f.repo, Since: f.since, Branch: f.branch, Loaded: *loaded, Cache: f.cache,
		History: db, Lab: deviceLab(f.hostHeld()), Dir: sessDir, Tool: "perflab " + version, Source: experiment,
		Detect: f.detect(), MaxTrials: f.maxTrials, Attempts: f.attempts, Logf: f.logf(stderr)})
}

// loop runs rounds: once with --once, else every --poll until ctx ends.
// It returns the alerts raised; err only when --once fails (a polling
// watch logs a failed round and tries again at the next poll).
func (f *watchFlags) loop(ctx context.Context, w *watch.Watcher, db *history.DB, experiment string, stderr io.Writer) ([]history.Alert, error) {
	logf := f.logf(stderr)
	hook := &watch.Webhook{URL: f.webhook, Logf: logf}
	defer hook.Wait()
	var raised []history.Alert
	for {
		r, err := w.Run(ctx)
		raised = append(raised, r.Alerts...)
		logf("watch %s on %s: %d commits after %s, %d measured now, %d done before, %d failed to build; %d new %s",
			f.repo, w.Device(), r.Commits, f.since, len(r.Recorded), r.Done, len(r.Failed), len(r.Alerts), sessions.Plural(len(r.Alerts), "alert"))
		f.sendAlerts(ctx, hook, db, experiment, raised, r.Alerts, stderr)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil && f.once:
			return raised, err
		case err != nil:
			// A device gone or a session failed: the watch pauses until the
			// next poll and goes on from the history.
			fmt.Fprintf(stderr, "perflab watch: %v; trying again in %v\n", err, f.poll)
		}
		if ctx.Err() != nil || f.once {
			return raised, nil
		}
		select {
		case <-ctx.Done():
			return raised, nil
		case <-time.After(f.poll):
		}
		if err := w.Fetch(ctx); err != nil {
			logf("git fetch: %v (looking at what is here)", err)
		}
	}
}

// sendAlerts writes the --alerts files (every alert of this run) and
// posts the round's alerts to the webhook when one is confirmed.
func (f *watchFlags) sendAlerts(ctx context.Context, hook *watch.Webhook, db *history.DB, experiment string, raised, round []history.Alert, stderr io.Writer) {
	rep := watch.NewReport(f.repo, experiment, db.Path(), raised)
	for _, file := range f.alerts {
		if err := rep.WriteFile(file); err != nil {
			fmt.Fprintln(stderr, "perflab watch:", err)
		}
	}
	if f.webhook != "" && anyConfirmed(round) {
		hook.Post(context.WithoutCancel(ctx), watch.NewReport(f.repo, experiment, db.Path(), round))
	}
}

func anyConfirmed(alerts []history.Alert) bool {
	for _, a := range alerts {
		if a.Confirmed {
			return true
		}
	}
	return false
}
