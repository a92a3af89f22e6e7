package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/lab/local"
	"github.com/perflab/perflab/lab/sshworker"
	"github.com/perflab/perflab/sessions"
	"github.com/perflab/perflab/sessions/engine"
)

const suiteUsage = `Usage: perflab suite [--base REV] [--head REV] [-bench REGEXP] [flags] [PACKAGES]

Compares a Go module's benchmark suite at two revisions, as ElastiBench
does, on this host: both revisions' test binaries (go test -c, each
revision in its own git worktree, the build cache shared), run in paired
rounds: each round runs every benchmark of A once and of B once
(-test.count=1, a short --benchtime: the statistics come from many rounds,
not long runs), A and B in random order, a warm-up round first; with
--workers N, N local workers run rounds side by side (ElastiBench's
parallel instances on one host: for benchmarks that wait more than they
compute, or cores to spare), and the analysis blocks on worker. A
benchmark's verdict rests on its rounds (the per-round log ratio, the
signed-rank test, its Hodges–Lehmann Δ and interval: the verdicts of perflab
run; with --stop auto the sequential analysis, and the run ends once every
tested benchmark is decided, which needs a --threshold for "no change"),
corrected across the suite's benchmarks and units by Benjamini and
Hochberg (the share of false reports among those reported, which suits a
list of benchmarks better than the chance of any). Every unit a benchmark
prints is a metric: ns/op (named by the benchmark), B/op, allocs/op, MB/s
and every b.ReportMetric unit (named BENCH:UNIT), higher better for rates.

--parallel N runs N local workers, each pinned to its own CPUs (for
CPU-bound benchmarks on a many-core host). Workers on other machines:
--worker ssh://ALIAS (repeatable) adds a host
reached exactly as "ssh ALIAS" reaches it (the system's OpenSSH client and
~/.ssh/config, or --ssh-config FILE; one multiplexed connection a host):
the test binaries are cross-compiled for its uname -sm, copied to a
private temporary folder there, run, and removed at the end. A host that
goes away leaves the pool and its round is redone on another worker. With
--stop auto, a decided benchmark gets no more rounds while the others go
on.

Validation as ElastiBench's: --aa builds --head twice and compares it
with itself (every benchmark reported changed is a false positive);
--agree SESSION1 SESSION2 says on how many benchmarks two runs agree (the
same direction of change, or none found in either).

Run it in the module's checkout. --base defaults to the merge-base of HEAD
with origin's default branch, else HEAD~1 (the line before the table says
which); --head defaults to the work tree, uncommitted changes included.
PACKAGES default to "." (go list patterns: ./... for all). A benchmark in
one revision only is listed, not compared.

The run is a session (perflab report, replay, --json); exit status 0 no
regression, 3 a benchmark regressed, 1 error, 2 usage.

Examples:
  perflab suite                                   # HEAD~1 (or the merge-base) vs the work tree
  perflab suite --base v1.2.0 --head v1.3.0 -bench 'Sort|Search' ./...
  perflab suite --trials 20 --benchtime 200ms --json > suite.json
  perflab suite --aa --trials 16                  # the work tree against itself
  perflab suite --agree run1.jsonl run2.jsonl
  perflab suite --worker ssh://bench1 --worker ssh://bench2 --stop auto --max-trials 40 ./...

Manual: docs/suite.md

Flags:
`

// cmdSuite runs a Go module's benchmarks of two revisions as one session.
func cmdSuite(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	base := fs.String("base", "", "the base revision (A; default: the merge-base with origin's default branch, else HEAD~1)")
	head := fs.String("head", "", "the revision compared with it (B; default: the work tree)")
	bench := fs.String("bench", ".", "run the benchmarks matching `REGEXP` (as go test -bench)")
	benchtime := fs.String("benchtime", "", "each benchmark's run per round, as go test -benchtime (a duration, or Nx; default 100ms, with --measure cachegrind 100x)")
	measure := fs.String("measure", "time", "time (go test's own numbers) or cachegrind (instructions and estimated cycles under valgrind: nearly deterministic, for noisy CI runners)")
	trials := fs.Int("trials", 10, "rounds (runs of every benchmark per revision)")
	stop := fs.String("stop", "fixed", "fixed (run --trials rounds) or auto (stop once every tested benchmark is decided, at the latest at --max-trials)")
	maxTrials := fs.Int("max-trials", 0, "with --stop auto: at most this many rounds (default: --trials)")
	workers := fs.Int("workers", 1, "local workers running rounds side by side (a pool: local, local#2, ...; the analysis blocks on worker); for benchmarks that wait more than they compute, or cores to spare")
	parallel := fs.Int("parallel", 0, "N local workers, each pinned to its own CPUs (the host's split into N sets, taskset): for CPU-bound benchmarks on a many-core host; a warning when N exceeds the CPUs")
	aa := fs.Bool("aa", false, "A/A: the --head revision (default: the work tree) against itself, two builds of it: every benchmark reported changed is a false positive")
	agree := fs.Bool("agree", false, "perflab suite --agree SESSION1 SESSION2: on how many benchmarks two suite runs agree (ElastiBench's measure), nothing run")
	var workerSpecs repeatedFlag
	fs.Var(&workerSpecs, "worker", "a worker running rounds: ssh://ALIAS or ssh://[USER@]HOST[:PORT] (reached as `ssh ALIAS` reaches it), adb:SERIAL or adb:model=MODEL (a phone of the --adb servers), local, local#N; repeatable")
	workersFile := fs.String("workers-file", "", "a `FILE` listing workers, one a line (# comments)")
	var acc deviceAccess
	acc.register(fs)
	warmup := fs.Int("warmup", 1, "warm-up rounds, recorded but not analysed")
	seed := fs.Int64("seed", 1, "seed of the rounds' order")
	var threshold float64
	fs.Var(percentFlag{&threshold}, "threshold", "practical threshold, e.g. 2%: a change whose CI lies within ±threshold is no change")
	out := fs.String("out", "", "session `FILE` (default: $XDG_DATA_HOME/perflab/sessions/ID.jsonl)")
	asJSON := fs.Bool("json", false, "print the report as JSON (report --json schema)")
	useTUI := fs.Bool("tui", false, "watch the suite in the workbench (the run dashboard: a row per benchmark metric, the undecided ones on top; enter starts it)")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	pos, code, ok := parseCommandFlags(fs, args, suiteUsage, stdout, stderr)
	if !ok {
		return code
	}
	if *agree {
		return suiteAgree(pos, *asJSON, stdout, stderr)
	}
	if *aa && *base != "" {
		fmt.Fprintln(stderr, "perflab suite: --aa compares --head with itself: give no --base")
		return exitUsage
	}
	switch {
	case *measure != "time" && *measure != "cachegrind":
		fmt.Fprintf(stderr, "perflab suite: --measure %q: want time or cachegrind\n", *measure)
		return exitUsage
	case *benchtime == "" && *measure == "cachegrind":
		*benchtime = "100x"
	case *benchtime == "":
		*benchtime = "100ms"
	case *measure == "cachegrind" && !strings.HasSuffix(*benchtime, "x"):
		fmt.Fprintf(stderr, "perflab suite: --benchtime %s: with --measure cachegrind give a count of iterations (e.g. 100x): a time under valgrind measures nothing fixed\n", *benchtime)
		return exitUsage
	}
	if *measure == "cachegrind" {
		if _, err := exec.LookPath("valgrind"); err != nil {
			fmt.Fprintln(stderr, "perflab suite: --measure cachegrind needs valgrind (apt-get install valgrind)")
			return exitError
		}
	}
	if *workers < 1 || *workers > 64 {
		fmt.Fprintf(stderr, "perflab suite: --workers %d: want 1 to 64\n", *workers)
		return exitUsage
	}
	if *trials < 2 {
		fmt.Fprintf(stderr, "perflab suite: --trials %d: want at least 2 rounds\n", *trials)
		return exitUsage
	}
	if _, err := regexp.Compile(*bench); err != nil {
		fmt.Fprintf(stderr, "perflab suite: -bench %q: %v\n", *bench, err)
		return exitUsage
	}
	pkgs := pos
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	workersSet := false
	fs.Visit(func(f *flag.Flag) { workersSet = workersSet || f.Name == "workers" })
	switch {
	case *parallel < 0 || *parallel > 64:
		fmt.Fprintf(stderr, "perflab suite: --parallel %d: want 1 to 64\n", *parallel)
		return exitUsage
	case *parallel > 0 && workersSet:
		fmt.Fprintln(stderr, "perflab suite: --parallel N pins N local workers, --workers N leaves them free: give one")
		return exitUsage
	case *parallel > 0:
		*workers, workersSet = *parallel, true
		if *parallel > runtime.NumCPU() {
			fmt.Fprintf(stderr, "perflab suite: warning: --parallel %d on a host of %d CPUs: workers share CPUs and CPU-bound benchmarks disturb each other (at most %d can be isolated)\n", *parallel, runtime.NumCPU(), runtime.NumCPU())
		}
	}
	ids, err := suiteWorkers(*workers, workersSet, workerSpecs, *workersFile)
	if err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitUsage
	}
	if !acc.openOr(ctx, "perflab suite", stderr) {
		return exitError
	}
	defer acc.close()
	devOpt := acc.options()
	devOpt.Seed, devOpt.PinWorkers = *seed, *parallel
	if ids, err = devices.Resolve(ctx, ids, devOpt); err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	platforms, err := workerPlatforms(ctx, ids, devOpt, *measure == "cachegrind", stderr)
	if err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	s, err := prepareSuite(ctx, suiteConfig{base: *base, head: *head, bench: *bench, benchtime: *benchtime, pkgs: pkgs,
		cachegrind: *measure == "cachegrind", platforms: platforms, aa: *aa}, stderr)
	if s != nil {
		defer s.cleanup()
	}
	if err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	exp := &lab.Experiment{Device: "local", Order: lab.OrderRandom, Trials: *trials, Warmup: *warmup, Seed: *seed,
		Alpha: lab.DefaultAlpha, Confidence: lab.DefaultConfidence,
		Threshold: threshold, Suite: &s.info,
		Builds: map[string]lab.Build{lab.ArmControl: s.build[0], lab.ArmTreatment: s.build[1]}}
	exp.Stop = *stop
	if *stop == lab.StopAuto {
		exp.MaxTrials = max(*maxTrials, *trials)
	}
	if len(ids) > 1 || ids[0] != "local" {
		exp.SetDevices(ids)
	}
	if err := exp.Validate(); err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	if *useTUI {
		// The workbench runs experiment files: the suite's, beside its
		// binaries (removed when the workbench quits).
		data, err := json.MarshalIndent(exp, "", "  ")
		if err == nil {
			path := filepath.Join(s.tmp, "suite.json")
			if err = os.WriteFile(path, data, 0o644); err == nil {
				var args []string
				if *out != "" {
					args = []string{"--out", *out}
				}
				return openRunTUI(ctx, path, args, stdout, stderr)
			}
		}
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	r := &headlessRun{stdout: stdout, stderr: stderr, quiet: *quiet, json: *asJSON}
	return r.run(ctx, engine.Plan{Experiment: *exp, Tool: "perflab " + version, Source: "perflab suite", Path: *out,
		HandOffEvery: headlessHandOff}, deviceLab(devOpt))
}

// suiteAgree is perflab suite --agree SESSION1 SESSION2: each session's
// verdicts as perflab report gives them, and on how many benchmark metrics
// the two agree (analysis.Agree: the same direction of change, or none
// found in both).
func suiteAgree(paths []string, asJSON bool, stdout, stderr io.Writer) int {
	if len(paths) != 2 {
		fmt.Fprintln(stderr, "perflab suite --agree: give two session files (perflab suite --agree SESSION1 SESSION2)")
		return exitUsage
	}
	var reps [2]analysis.Report
	for i, path := range paths {
		s, err := sessions.Load(path)
		if err != nil {
			fmt.Fprintln(stderr, "perflab suite --agree:", err)
			return exitError
		}
		plan := &s.Header.Plan
		opt := engine.Options(plan)
		events, _, err := regimeEvents(s.Events, "", opt)
		if err != nil {
			fmt.Fprintf(stderr, "perflab suite --agree: %s: %v\n", path, err)
			return exitError
		}
		reps[i] = engine.Analyse(plan, sessions.ArmInputs(events, len(plan.ArmKeys())), opt).Report
	}
	ag := analysis.Agree(reps[0], reps[1])
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Sessions [2]string `json:"sessions"`
			analysis.Agreement
			Share analysis.Float `json:"share"`
		}{[2]string{paths[0], paths[1]}, ag, ag.Share()}); err != nil {
			fmt.Fprintln(stderr, "perflab suite --agree:", err)
			return exitError
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "agreement of 1: %s\n             2: %s\n(the same direction of change in both, or none found in either)\n\n", paths[0], paths[1])
	rows := [][]string{{"metric", "run 1", "run 2", "agree"}}
	for _, r := range ag.Rows {
		mark := "yes"
		if !r.Agree {
			mark = "NO"
		}
		rows = append(rows, []string{r.Metric, r.A, r.B, mark})
	}
	var sb strings.Builder
	analysis.WriteAligned(&sb, rows, []bool{false, false, false, false})
	io.WriteString(stdout, sb.String())
	fmt.Fprintf(stdout, "\n%d of %d tested metrics agree", ag.Agree, ag.Total)
	if ag.Total > 0 {
		fmt.Fprintf(stdout, " (%.1f%%)", 100*float64(ag.Share()))
	}
	fmt.Fprintln(stdout)
	if ag.UntestedInBoth > 0 {
		fmt.Fprintf(stdout, "%d metrics untested in both (the same constant in both arms)\n", ag.UntestedInBoth)
	}
	for i, only := range [][]string{ag.OnlyA, ag.OnlyB} {
		if len(only) > 0 {
			fmt.Fprintf(stdout, "only in run %d: %s\n", i+1, strings.Join(only, ", "))
		}
	}
	return exitOK
}

// suiteWorkers is the pool: --workers N local workers (local, local#2,
// ...) unless only --worker/--workers-file name workers, then those.
func suiteWorkers(n int, nSet bool, specs []string, file string) ([]string, error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--workers-file: %v", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line, _, _ = strings.Cut(line, "#")
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			if strings.ContainsAny(line, " \t") {
				return nil, fmt.Errorf("%s:%d: %q: one worker a line", file, i+1, line)
			}
			specs = append(specs, line)
		}
		if len(specs) == 0 {
			return nil, fmt.Errorf("%s lists no worker", file)
		}
	}
	var ids []string
	if nSet || len(specs) == 0 {
		ids = append(ids, "local")
		for i := 2; i <= n; i++ {
			ids = append(ids, fmt.Sprintf("local#%d", i))
		}
	}
	for _, w := range specs {
		switch {
		case strings.HasPrefix(w, "ssh://"):
			if _, err := sshworker.Parse(w); err != nil {
				return nil, err
			}
		case w == "local" || strings.HasPrefix(w, "local#") || strings.HasPrefix(w, "adb:"):
		default:
			return nil, fmt.Errorf("--worker %q: want ssh://HOST, adb:SERIAL, adb:model=MODEL, local or local#N", w)
		}
		if slices.Contains(ids, w) {
			return nil, fmt.Errorf("--worker %s is given twice", w)
		}
		ids = append(ids, w)
	}
	return ids, nil
}

// workerPlatforms connects to every remote worker (so that a host that
// refuses the key, or a phone that is gone, is said before anything is
// built) and returns the platforms to build for, this host's first: an
// ssh host's from its uname -sm, a phone's from its ABI (a simulated
// phone runs the serving host's programs).
func workerPlatforms(ctx context.Context, ids []string, opt devices.Options, cachegrind bool, stderr io.Writer) ([]string, error) {
	plats := []string{hostPlatform()}
	for _, id := range ids {
		if !strings.HasPrefix(id, "ssh://") && !strings.HasPrefix(id, "adb:") {
			continue
		}
		if cachegrind {
			return nil, fmt.Errorf("--measure cachegrind runs on this host's workers only (it needs perflab and valgrind beside the benchmarks): %s is remote", id)
		}
		d, err := devices.Open(ctx, id, opt)
		if err != nil {
			return nil, err
		}
		pl, ok := d.(interface {
			Platform(context.Context) (string, error)
		})
		if !ok {
			d.Close()
			return nil, fmt.Errorf("worker %s cannot run test binaries", id)
		}
		plat, err := pl.Platform(ctx)
		d.Close()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "worker %s: %s\n", id, plat)
		if !slices.Contains(plats, plat) {
			plats = append(plats, plat)
		}
	}
	return plats, nil
}

type suiteConfig struct {
	base, head, bench, benchtime string
	pkgs                         []string
	cachegrind                   bool
	aa                           bool // the head against itself
	// platforms are the GOOS_GOARCH to build for, this host's first
	// (remote workers may add others).
	platforms []string
}

// suiteSide is one revision's checkout and test binaries.
type suiteSide struct {
	label string // "base abc1234", "work tree"
	rev   string // the commit ("" for the work tree)
	dir   string // the module's folder in the checkout
	bins  []suiteBin
}

// suiteBin is one package's test binary and its benchmarks.
type suiteBin struct {
	pkg, dir  string // import path, source folder
	rel, name string // folder in the bundle, binary's file name
	benches   []string
}

// suitePrep is a prepared suite: both sides built, the builds to run.
type suitePrep struct {
	info      lab.SuiteInfo
	build     [2]lab.Build
	tmp       string
	bundle    string // tmp/bundle: PLATFORM/{a,b}/pkgN/ (lab.Build.Files)
	toplevel  string
	worktrees []string
}

func (s *suitePrep) cleanup() {
	for _, w := range s.worktrees {
		exec.Command("git", "-C", s.toplevel, "worktree", "remove", "--force", w).Run()
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// prepareSuite finds the module and the revisions, builds both sides'
// test binaries and lists their common benchmarks.
func prepareSuite(ctx context.Context, c suiteConfig, stderr io.Writer) (*suitePrep, error) {
	gomod, err := output(ctx, ".", "go", "env", "GOMOD")
	if err != nil || gomod == "" || gomod == os.DevNull {
		return nil, fmt.Errorf("not in a Go module (no go.mod here or above): run perflab suite in the module's checkout")
	}
	modDir := filepath.Dir(gomod)
	top, err := output(ctx, modDir, "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git checkout: perflab suite compares revisions", modDir)
	}
	rel, err := filepath.Rel(top, modDir)
	if err != nil {
		return nil, err
	}
	module, _ := output(ctx, modDir, "go", "list", "-m")
	s := &suitePrep{toplevel: top, info: lab.SuiteInfo{Module: module, Packages: c.pkgs, Bench: c.bench, Benchtime: c.benchtime}}
	if s.tmp, err = os.MkdirTemp("", "perflab-suite-"); err != nil {
		return s, err
	}
	s.bundle = filepath.Join(s.tmp, "bundle")
	if len(c.platforms) == 0 {
		c.platforms = []string{hostPlatform()}
	}
	baseRev, baseName := c.base, c.base
	switch {
	case c.aa:
		baseRev, baseName = c.head, c.head
	case baseRev == "":
		baseRev, baseName = defaultBase(ctx, top)
	}
	sides := [2]*suiteSide{}
	for i, spec := range []struct{ name, rev string }{{baseName, baseRev}, {c.head, c.head}} {
		side := &suiteSide{label: "work tree", dir: modDir}
		if spec.rev != "" {
			commit, err := output(ctx, top, "git", "rev-parse", "--verify", "--quiet", spec.rev+"^{commit}")
			if err != nil || commit == "" {
				return s, fmt.Errorf("revision %q does not exist in %s", spec.rev, top)
			}
			wt := filepath.Join(s.tmp, []string{"base", "head"}[i])
			if out, err := exec.CommandContext(ctx, "git", "-C", top, "worktree", "add", "--detach", wt, commit).CombinedOutput(); err != nil {
				return s, fmt.Errorf("git worktree add %s: %v: %s", spec.rev, err, strings.TrimSpace(string(out)))
			}
			s.worktrees = append(s.worktrees, wt)
			side.rev, side.dir = commit, filepath.Join(wt, rel)
			side.label = fmt.Sprintf("%s %.7s", spec.name, commit)
		}
		if c.aa {
			side.label += []string{" (A)", " (B)"}[i]
		}
		fmt.Fprintf(stderr, "building %s (%s)\n", side.label, []string{"A", "B"}[i])
		if err := buildSide(ctx, side, i, c, s.bundle); err != nil {
			return s, fmt.Errorf("%s: %w", side.label, err)
		}
		sides[i] = side
	}
	s.info.Base, s.info.BaseRev = baseName, sides[0].rev
	s.info.Head, s.info.HeadRev = c.head, sides[1].rev
	if c.head == "" {
		s.info.Head = "work tree"
		if c.aa {
			s.info.Base = "work tree"
		}
	}
	if err := s.commonBuilds(sides, c, stderr); err != nil {
		return s, err
	}
	return s, nil
}

// defaultBase is the merge-base of HEAD with origin's default branch when
// it is not HEAD itself, else HEAD~1.
func defaultBase(ctx context.Context, top string) (rev, name string) {
	if mb, err := output(ctx, top, "git", "merge-base", "HEAD", "origin/HEAD"); err == nil && mb != "" {
		if h, _ := output(ctx, top, "git", "rev-parse", "HEAD"); h != mb {
			return mb, "merge-base"
		}
	}
	return "HEAD~1", "HEAD~1"
}

// buildSide compiles the test binary of every package of the side that
// has tests, for each platform (the first this host's), into
// bundle/PLATFORM/{a,b}/pkgN/ with the package's testdata beside it (a
// link here, copied to remote workers), and lists the host binary's
// benchmarks matching c.bench.
func buildSide(ctx context.Context, side *suiteSide, arm int, c suiteConfig, bundle string) error {
	list, err := output(ctx, side.dir, "go", append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}"}, c.pkgs...)...)
	if err != nil {
		return fmt.Errorf("go list %s: %v", strings.Join(c.pkgs, " "), err)
	}
	for i, line := range strings.Split(list, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[2] == "0" {
			continue
		}
		rel := filepath.Join([]string{"a", "b"}[arm], fmt.Sprintf("pkg%d", i))
		name := fmt.Sprintf("pkg%d.test", i)
		built := false
		for j, plat := range c.platforms {
			dir := filepath.Join(bundle, plat, rel)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", filepath.Join(dir, name), f[0])
			cmd.Dir = side.dir
			if j > 0 || plat != hostPlatform() {
				goos, goarch, _ := strings.Cut(plat, "_")
				cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				what := "does not build"
				if j > 0 {
					what = "does not build for " + plat
				}
				return fmt.Errorf("go test -c %s %s: %s", f[0], what, lastLines(strings.TrimSpace(string(out)), 5))
			}
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				break // a package without tests to run
			}
			built = true
			if td := filepath.Join(f[1], "testdata"); isDir(td) {
				if err := os.Symlink(td, filepath.Join(dir, "testdata")); err != nil {
					return err
				}
			}
		}
		if !built {
			continue
		}
		benches, err := output(ctx, f[1], filepath.Join(bundle, c.platforms[0], rel, name), "-test.list", c.bench)
		if err != nil {
			return fmt.Errorf("%s -test.list: %v", f[0], err)
		}
		var bs []string
		for _, b := range strings.Fields(benches) {
			if strings.HasPrefix(b, "Benchmark") {
				bs = append(bs, b)
			}
		}
		side.bins = append(side.bins, suiteBin{pkg: f[0], dir: f[1], rel: rel, name: name, benches: bs})
	}
	return nil
}

// hostPlatform is this host's GOOS_GOARCH, as bundle folders are named.
func hostPlatform() string { return runtime.GOOS + "_" + runtime.GOARCH }

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// commonBuilds makes each side's build: the benchmarks both sides have
// (those of one side only are listed on stderr) as a lab.BenchSpec.
func (s *suitePrep) commonBuilds(sides [2]*suiteSide, c suiteConfig, stderr io.Writer) error {
	byPkg := func(side *suiteSide) map[string]suiteBin {
		m := map[string]suiteBin{}
		for _, b := range side.bins {
			m[b.pkg] = b
		}
		return m
	}
	a, b := byPkg(sides[0]), byPkg(sides[1])
	var pkgs []string
	for p := range a {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var specs [2]lab.BenchSpec
	for i := range specs {
		specs[i].Benchtime = c.benchtime
		if c.cachegrind {
			// One process per benchmark under valgrind, each its own
			// instructions and estimated cycles (suite-cachegrind).
			self, err := os.Executable()
			if err != nil {
				return err
			}
			specs[i].Wrapper = []string{self, suiteCachegrindCmd}
		}
	}
	n := 0
	for _, p := range pkgs {
		ba, ok := b[p]
		if !ok {
			fmt.Fprintf(stderr, "not compared: package %s has no tests in %s\n", p, sides[1].label)
			continue
		}
		var common []string
		for _, x := range a[p].benches {
			if slices.Contains(ba.benches, x) {
				common = append(common, strings.TrimPrefix(x, "Benchmark"))
			} else {
				fmt.Fprintf(stderr, "not compared: %s.%s is only in %s\n", p, x, sides[0].label)
			}
		}
		for _, x := range ba.benches {
			if !slices.Contains(a[p].benches, x) {
				fmt.Fprintf(stderr, "not compared: %s.%s is only in %s\n", p, x, sides[1].label)
			}
		}
		if len(common) == 0 {
			continue
		}
		n += len(common)
		for i, bin := range []suiteBin{a[p], ba} {
			specs[i].Packages = append(specs[i].Packages, lab.BenchPackage{Path: p, Dir: bin.rel, Binary: bin.name, Benchmarks: common})
		}
	}
	if n == 0 {
		return fmt.Errorf("no benchmark matching -bench %q is in both revisions", c.bench)
	}
	fmt.Fprintf(stderr, "%d benchmarks in both revisions\n", n)
	for i, side := range sides {
		spec := specs[i]
		s.build[i] = lab.Build{Name: side.label, Command: spec.ListingCommand(), Dir: filepath.Join(s.bundle, c.platforms[0]),
			Files: s.bundle, Output: lab.OutputGoBench, Bench: &spec}
	}
	return nil
}

// output runs a command in dir and returns its trimmed stdout.
func output(ctx context.Context, dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			err = fmt.Errorf("%v: %s", err, lastLines(s, 3))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// suiteCachegrindCmd is the hidden command a cachegrind suite's trials
// run: each benchmark of a test binary in its own process under valgrind,
// printed as go test -bench lines of its instructions and estimated
// cycles for the run of --benchtime iterations.
const suiteCachegrindCmd = "__suite-cachegrind"

// cmdSuiteCachegrind is suiteCachegrindCmd: perflab __suite-cachegrind
// --pkg PKG --benchtime Nx BINARY NAME... (NAME without "Benchmark").
func cmdSuiteCachegrind(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(suiteCachegrindCmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	pkg := fs.String("pkg", "", "the package, for the pkg: line")
	benchtime := fs.String("benchtime", "100x", "iterations")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 {
		fmt.Fprintln(stderr, "usage: perflab "+suiteCachegrindCmd+" --pkg PKG --benchtime Nx BINARY NAME...")
		return exitUsage
	}
	bin := fs.Arg(0)
	// One processor: the Go scheduler's idle spinning otherwise makes the
	// instruction count vary by tens of percent between runs (measured
	// here: 11.6–14.6M against 8.56–8.66M with GOMAXPROCS=1).
	os.Setenv("GOMAXPROCS", "1")
	fmt.Fprintf(stdout, "pkg: %s\n", *pkg)
	for _, name := range fs.Args()[1:] {
		ir, cost, _, err := local.Cachegrind(ctx, ".", []string{bin, "-test.run=^$", "-test.bench=^Benchmark" + regexp.QuoteMeta(name) + "$",
			"-test.benchtime=" + *benchtime, "-test.count=1"})
		if err != nil {
			fmt.Fprintln(stderr, "perflab suite:", err)
			return exitError
		}
		fmt.Fprintf(stdout, "Benchmark%s 1 %.0f instructions %.0f est-cycles\n", name, ir, cost)
	}
	return exitOK
}
