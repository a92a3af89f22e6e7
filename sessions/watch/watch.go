// Package watch follows a branch commit by commit (perflab watch): each
// first-parent commit after a starting one is built, compared in paired
// rounds with a reference build through the engine, and recorded in the
// history (sessions/history); then the change-point detector
// (analysis/changepoint) searches the series, and each step it finds that
// has no alert yet is re-measured: a fresh A/B of the commits on either
// side of the step's window, the first comparison of a bisect over them
// (sessions/bisect), which goes on to name the first bad commit when the step
// is a confirmed regression. The package knows nothing of the UI:
// progress goes to a log function.
package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/analysis/changepoint"
	"github.com/perflab/perflab/format"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/bisect"
	"github.com/perflab/perflab/sessions/engine"
	"github.com/perflab/perflab/sessions/history"
)

// SimFile is the file that, committed in the watched repository,
// describes each commit's simulated build on a sim: device, e.g.
// {"app": "feed", "effect_pct": 2}.
const SimFile = "perflab-sim.json"

// Config is one watch.
type Config struct {
	// Repo is the git checkout; Since the commit after which every
	// first-parent commit up to Branch (default HEAD) is measured.
	Repo, Since, Branch string
	// Loaded is the experiment: template, reference, build step.
	Loaded Loaded
	// Cache holds the commits' worktrees and builds (default
	// bisect.DefaultCache: shared with perflab bisect).
	Cache string
	// History records the results and the alerts.
	History *history.DB
	// Lab opens devices; Dir is the sessions folder.
	Lab engine.Lab
	Dir string
	// Tool and Source go into every session's header.
	Tool, Source string
	// Detect are the change-point detector's options.
	Detect changepoint.Options
	// MaxTrials and Attempts are the confirmation's and bisect's
	// (bisect.Config; 0 takes its defaults).
	MaxTrials, Attempts int
	// Logf gets one line per step (nil: none).
	Logf func(format string, args ...any)
}

// Commit is one first-parent commit of the watched branch.
type Commit struct {
	Rev, Short, Subject string
	Time                string // commit time, RFC 3339 UTC
	Seq                 int    // first-parent depth: the series' order when times tie
}

// Name is the build's name: short hash and subject, as bisect names a
// git range's builds.
func (c Commit) Name() string { return strings.TrimSpace(c.Short + " " + c.Subject) }

// Watcher runs a watch's rounds.
type Watcher struct {
	cfg      Config
	exp      lab.Experiment
	git      *bisect.GitRange
	since    Commit
	device   string // the device's name in the history
	metric   string
	ref      lab.Build
	refReady bool
	refRev   history.Rev
	built    map[string]lab.Build
	// lines is the number of per-commit comparisons asked together: the
	// commits of the range at this round (Run), over which each line's
	// verdict and interval are corrected (analysis.Options.Across).
	lines int
}

// New checks the repository and the device and returns a watcher.
func New(ctx context.Context, cfg Config) (*Watcher, error) {
	if cfg.Branch == "" {
		cfg.Branch = "HEAD"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	w := &Watcher{cfg: cfg, exp: cfg.Loaded.Experiment, built: map[string]lab.Build{}}
	if w.cfg.Cache == "" {
		c, err := bisect.DefaultCache(cfg.Repo)
		if err != nil {
			return nil, err
		}
		w.cfg.Cache = c
	}
	abs, err := filepath.Abs(w.cfg.Cache)
	if err != nil {
		return nil, err
	}
	w.cfg.Cache = abs
	s := cfg.Loaded.Spec
	w.git = &bisect.GitRange{Dir: cfg.Repo, Build: s.Build, Run: s.Run, APK: s.APK, Cache: abs}
	if _, err := w.gitOut(ctx, "rev-parse", "--git-dir"); err != nil {
		return nil, fmt.Errorf("%s is not a git repository: perflab watch follows the commits of a git checkout (--git DIR, default the current folder)", cfg.Repo)
	}
	since, err := w.commit(ctx, cfg.Since)
	if err != nil {
		return nil, fmt.Errorf("--since %s: %w", cfg.Since, err)
	}
	w.since = since
	if err := w.openDevice(ctx); err != nil {
		return nil, err
	}
	w.metric = w.exp.PrimaryMetric()
	if r := cfg.Loaded.Reference; r != nil {
		w.ref, w.refReady = *r, true
		if w.ref.Name == "" {
			w.ref.Name = "reference"
		}
		w.refRev = history.Rev{Time: since.Time, Seq: since.Seq, Name: w.ref.Name}
	} else {
		w.refRev = history.Rev{Rev: since.Rev, Time: since.Time, Seq: since.Seq, Name: since.Name()}
	}
	return w, nil
}

// Device is the device's name in the history (its model, or the host).
func (w *Watcher) Device() string { return w.device }

// openDevice resolves the experiment's device once, to name it as the
// history does.
func (w *Watcher) openDevice(ctx context.Context) error {
	ids := w.exp.DeviceList()
	if w.cfg.Lab.Resolve != nil {
		var err error
		if ids, err = w.cfg.Lab.Resolve(ctx, ids); err != nil {
			return err
		}
	}
	if len(ids) != 1 {
		return fmt.Errorf("device: %d devices; perflab watch runs on one", len(ids))
	}
	dev, err := w.cfg.Lab.Open(ctx, ids[0], false)
	if err != nil {
		return fmt.Errorf("open device %s: %w", ids[0], err)
	}
	info := dev.Info()
	dev.Close()
	host, _ := os.Hostname()
	w.exp.Device, w.exp.Devices = ids[0], nil
	w.device = history.DeviceName(sessions.Header{Device: info, Host: host})
	return nil
}

// Round is what one round (the backlog of commits not yet measured)
// did.
type Round struct {
	// Commits counts the first-parent commits after Since; Done those
	// measured (or failed) before this round.
	Commits, Done int
	Recorded      []Commit
	Failed        []Commit
	// Claimed are the commits another watch was measuring (a history on
	// a server shared by many hosts): left to it.
	Claimed []Commit
	// Alerts are the alerts raised in this round, confirmed or not.
	Alerts []history.Alert
}

// Run measures every commit after Since not yet in the history for this
// device, then searches the series for steps and confirms the new ones.
// A commit that does not build is recorded as such and skipped.
func (w *Watcher) Run(ctx context.Context) (Round, error) {
	var r Round
	commits, err := w.commits(ctx)
	if err != nil {
		return r, err
	}
	done, err := w.cfg.History.DoneRevs(ctx, w.device)
	if err != nil {
		return r, err
	}
	r.Commits = len(commits)
	w.lines = len(commits)
	if len(commits) > len(done) {
		w.cfg.Logf("%s", w.linesRate())
	}
	for _, c := range commits {
		if done[c.Rev] {
			r.Done++
			continue
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		// Another watch writing to the same history (another host, one
		// server) may be measuring this commit on this device: one does.
		release, mine, err := w.cfg.History.Claim(ctx, w.device, c.Rev)
		if err != nil {
			return r, err
		}
		if !mine {
			w.cfg.Logf("%s: another watch is measuring it on %s; left to it", c.Name(), w.device)
			r.Claimed = append(r.Claimed, c)
			continue
		}
		// Measured since the list was read (by the watch that held it)?
		if again, err := w.cfg.History.DoneRevs(ctx, w.device); err == nil && again[c.Rev] {
			release()
			r.Done++
			continue
		}
		ok, err := w.measure(ctx, c)
		release()
		if err != nil {
			return r, err
		}
		if ok {
			r.Recorded = append(r.Recorded, c)
		} else {
			r.Failed = append(r.Failed, c)
		}
	}
	r.Alerts, err = w.detect(ctx)
	return r, err
}

// measure builds commit c, compares it with the reference and records
// the session. ok is false when c did not build (recorded as such).
func (w *Watcher) measure(ctx context.Context, c Commit) (ok bool, err error) {
	ref, err := w.reference(ctx)
	if err != nil {
		return false, err
	}
	b, err := w.build(ctx, c)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		w.cfg.Logf("%s: does not build, skipped: %v", c.Name(), err)
		return false, w.cfg.History.RecordBuildFailure(ctx, w.device, c.Rev, err.Error())
	}
	exp := w.exp
	exp.Builds = map[string]lab.Build{lab.ArmControl: ref, lab.ArmTreatment: b}
	exp.Seed = w.exp.Seed + int64(c.Seq)*7919 // each commit its own noise, the same again on a rerun
	path, m, err := w.session(ctx, &exp)
	if err != nil {
		return false, err
	}
	revs := map[string]history.Rev{lab.ArmControl: w.refRev,
		lab.ArmTreatment: {Rev: c.Rev, Time: c.Time, Seq: c.Seq, Name: c.Name()}}
	if _, err := w.cfg.History.RecordSession(ctx, path, history.KindWatch, revs); err != nil {
		return false, err
	}
	if w.metric == "" {
		w.metric = m.Name
	}
	w.cfg.Logf("%s: median %.4g %s, Δ %s [%s, %s] against %s: %s (%d trials a build); %s", c.Name(), float64(m.B.Median), m.Unit,
		format.SignedPct(m.Decision.DeltaPct), format.SignedPct(m.Decision.CILowPct), format.SignedPct(m.Decision.CIHighPct),
		w.ref.Name, m.Verdict, m.B.N, path)
	return true, nil
}

// linesRate says what a per-commit line's verdict is worth: each is one
// of the range's comparisons with the reference, corrected across them
// (Bonferroni), so that in a range where nothing changed the chance that
// any line says regression or improvement is at most the plan's α; and,
// when the plan's rounds are too few for a paired line to reach the
// corrected level, that no line can decide and how many rounds would.
func (w *Watcher) linesRate() string {
	plan := engine.Options(&w.exp)
	o := plan.Across(w.lines)
	msg := fmt.Sprintf("per-commit lines: each commit against %s at α %.2g with %.4g%% intervals, corrected across the range's %d commits (Bonferroni): at most %g that any line calls an unchanged commit changed; steps come from the change-point detector",
		w.refRev.Name, o.Alpha, o.Confidence*100, w.lines, plan.Alpha)
	if w.lines <= 1 {
		msg = fmt.Sprintf("per-commit lines: the range's one commit against %s at α %g with %.4g%% intervals", w.refRev.Name, o.Alpha, o.Confidence*100)
	}
	if (w.exp.Order == lab.OrderRandom || w.exp.Order == lab.OrderAlternate || w.exp.Order == "") && !o.Sequential {
		if need := analysis.SignedRankMinPairs(o.Alpha); w.exp.TrialCap() < need {
			msg += fmt.Sprintf(" (with %d trials a build no line can decide: %d would)", w.exp.TrialCap(), need)
		}
	}
	return msg
}

// reference builds the reference once.
func (w *Watcher) reference(ctx context.Context) (lab.Build, error) {
	if w.refReady {
		return w.ref, nil
	}
	b, err := w.build(ctx, w.since)
	if err != nil {
		return lab.Build{}, fmt.Errorf("the reference, --since %s: %w", w.since.Name(), err)
	}
	w.ref, w.refReady = b, true
	return b, nil
}

// session runs one comparison through the engine and analyses it as
// perflab report does; m is the primary metric's result.
func (w *Watcher) session(ctx context.Context, exp *lab.Experiment) (string, *analysis.MetricResult, error) {
	s, err := engine.Start(ctx, w.cfg.Lab, engine.Plan{Experiment: *exp, Tool: w.cfg.Tool, Source: w.cfg.Source,
		Dir: w.cfg.Dir, FreeName: true})
	if err != nil {
		return "", nil, err
	}
	fold := engine.NewFold(&s.Header.Plan)
	for it := range s.Events {
		if it.Event.Type != "" {
			fold.Add(it.Event)
		}
	}
	res := s.Wait()
	if res.Err != nil {
		return s.Path, nil, res.Err
	}
	if err := engine.EndErr(res.End); err != nil {
		return s.Path, nil, fmt.Errorf("session %s: %w", s.Path, err)
	}
	rep := analysis.Compare(fold.Inputs(), engine.Options(&s.Header.Plan).Across(w.lines))
	for i := range rep.Metrics {
		if w.metric == "" || rep.Metrics[i].Name == w.metric {
			return s.Path, &rep.Metrics[i], nil
		}
	}
	return s.Path, nil, fmt.Errorf("session %s: no counted trials of metric %q", s.Path, w.metric)
}

// build makes commit c's build once: on a simulated phone from its
// perflab-sim.json, else with the experiment's build step in a worktree
// of c (bisect.GitRange).
func (w *Watcher) build(ctx context.Context, c Commit) (lab.Build, error) {
	if b, ok := w.built[c.Rev]; ok {
		return b, nil
	}
	var b lab.Build
	var err error
	if IsSim(w.exp.Device) {
		b, err = w.simBuild(ctx, c)
	} else {
		b, err = w.git.Resolve(ctx, bisect.Candidate{Name: c.Name(), Rev: c.Rev})
	}
	if err != nil {
		return lab.Build{}, err
	}
	b.Name = c.Name()
	w.built[c.Rev] = b
	return b, nil
}

// simBuild reads commit c's perflab-sim.json: a sim build (app,
// effect_pct, ...), strictly.
func (w *Watcher) simBuild(ctx context.Context, c Commit) (lab.Build, error) {
	if _, err := w.gitOut(ctx, "cat-file", "-e", c.Rev+":"+SimFile); err != nil {
		return lab.Build{}, fmt.Errorf("commit %s has no %s: on a simulated phone (%s) each commit's build is the %s it commits, e.g. {\"app\": \"feed\", \"effect_pct\": 2} (docs/history.md, \"A watchable repository\")",
			c.Short, SimFile, w.exp.Device, SimFile)
	}
	data, err := w.gitOut(ctx, "show", c.Rev+":"+SimFile)
	if err != nil {
		return lab.Build{}, fmt.Errorf("%s at %s: %w", SimFile, c.Short, err)
	}
	var b lab.Build
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return lab.Build{}, fmt.Errorf("%s at %s: %w", SimFile, c.Short, err)
	}
	if b.App == "" {
		return lab.Build{}, fmt.Errorf("%s at %s: app: missing (a simulated app, e.g. \"feed\")", SimFile, c.Short)
	}
	return b, nil
}

// commits lists the first-parent commits after Since up to Branch,
// oldest first.
func (w *Watcher) commits(ctx context.Context) ([]Commit, error) {
	head, err := w.gitOut(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", w.cfg.Branch+"^{commit}")
	if err != nil || head == "" {
		return nil, fmt.Errorf("--branch %s: %w", w.cfg.Branch, w.noRevision(ctx, w.cfg.Branch))
	}
	if _, err := w.gitOut(ctx, "merge-base", "--is-ancestor", w.since.Rev, head); err != nil {
		return nil, fmt.Errorf("--since %s is not an ancestor of %s", w.cfg.Since, w.cfg.Branch)
	}
	out, err := w.gitOut(ctx, "log", "--first-parent", "--reverse", "--format=%H%x00%h%x00%cI%x00%s", w.since.Rev+".."+head)
	if err != nil {
		return nil, err
	}
	var list []Commit
	for i, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		c, err := parseCommit(line)
		if err != nil {
			return nil, err
		}
		c.Seq = w.since.Seq + i + 1
		list = append(list, c)
	}
	return list, nil
}

// commit resolves one revision.
func (w *Watcher) commit(ctx context.Context, rev string) (Commit, error) {
	if full, err := w.gitOut(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}"); err != nil || full == "" {
		return Commit{}, w.noRevision(ctx, rev)
	}
	line, err := w.gitOut(ctx, "log", "-1", "--format=%H%x00%h%x00%cI%x00%s", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return Commit{}, err
	}
	c, err := parseCommit(line)
	if err != nil {
		return Commit{}, err
	}
	n, err := w.gitOut(ctx, "rev-list", "--first-parent", "--count", c.Rev)
	if err != nil {
		return Commit{}, err
	}
	c.Seq, err = strconv.Atoi(n)
	return c, err
}

// noRevision says that rev names no commit of the repository, with how
// many commits HEAD has (a young repository's HEAD~5 is the usual case).
func (w *Watcher) noRevision(ctx context.Context, rev string) error {
	msg := fmt.Sprintf("revision %q does not exist in %s", rev, w.cfg.Repo)
	if n, err := w.gitOut(ctx, "rev-list", "--first-parent", "--count", "HEAD"); err == nil {
		msg += fmt.Sprintf(" (HEAD has %s first-parent %s; name a commit, tag or branch, e.g. --since HEAD~%d)", n,
			map[bool]string{true: "commit", false: "commits"}[n == "1"], max(1, atoiOr(n, 2)-1))
	}
	return errors.New(msg)
}

// atoiOr is s as an int, or def when it is not one.
func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

func parseCommit(line string) (Commit, error) {
	f := strings.SplitN(line, "\x00", 4)
	if len(f) != 4 {
		return Commit{}, fmt.Errorf("git log: unexpected line %q", line)
	}
	c := Commit{Rev: f[0], Short: f[1], Subject: f[3]}
	if t, err := time.Parse(time.RFC3339, f[2]); err == nil {
		c.Time = t.UTC().Format(time.RFC3339)
	}
	return c, nil
}

// Fetch runs git fetch when the repository has a remote (a polling
// watch's way to see new commits); without one it does nothing.
func (w *Watcher) Fetch(ctx context.Context) error {
	remotes, err := w.gitOut(ctx, "remote")
	if err != nil || remotes == "" {
		return err
	}
	_, err = w.gitOut(ctx, "fetch", "--quiet")
	return err
}

func (w *Watcher) gitOut(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", w.cfg.Repo}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", errors.New(msg)
		}
		return "", err
	}
	return strings.TrimSpace(stdout.String()), nil
}
