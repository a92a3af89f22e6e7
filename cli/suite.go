package cli

import (
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
	"strings"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/devices"
	"github.com/perflab/perflab/sessions/engine"
)

const suiteUsage = `Usage: perflab suite [--base REV] [--head REV] [-bench REGEXP] [flags] [PACKAGES]

Compares a Go module's benchmarks at two revisions (--base, default the
merge-base with origin's default branch, else HEAD~1; --head, default the
work tree) in paired, interleaved rounds on this host, SSH hosts or
phones, and stops each benchmark once it is decided. Run it in the
module's checkout; exit status 0 no regression, 3 a benchmark regressed,
1 error, 2 usage.

Examples:
  perflab suite                                   # HEAD~1 (or the merge-base) vs the work tree
  perflab suite --base v1.2.0 --head v1.3.0 -bench 'Sort|Search' ./...
  perflab suite --trials 20 --benchtime 200ms --json > suite.json   # 20 rounds, no stopping
  perflab suite --metrics time ./...              # only the times tested
  perflab suite --aa --trials 16                  # the work tree against itself
  perflab suite --agree run1.jsonl run2.jsonl
  perflab suite --worker ssh://bench1 --worker ssh://bench2 --max-trials 40 ./...
  perflab suite --markdown >> "$GITHUB_STEP_SUMMARY"  # a summary for a pull request

How it works:

Compares a Go module's benchmark suite at two revisions, as ElastiBench
does, on this host: both revisions' test binaries (go test -c, each
revision in its own git worktree, the build cache shared), run in paired
rounds: a round runs one benchmark of A once and of B once, side by side
(-test.count=1, a short --benchtime: the statistics come from many rounds,
not long runs), A and B in random order, the benchmarks' rounds
interleaved in passes of a random order each (--trials rounds of every
benchmark), a warm-up round of every benchmark at 1x first; with
--workers N, N local workers run rounds side by side (ElastiBench's
parallel instances on one host: for benchmarks that wait more than they
compute, or cores to spare), and the analysis blocks on worker. A
benchmark's verdict rests on its rounds (the per-round log ratio, the
signed-rank test, its Hodges–Lehmann Δ and interval: the verdicts of perflab
run; with stop auto the sequential analysis of the rounds' 20% trimmed
mean log ratio, --trim: a short run that a context switch slows now and
then does not widen every interval). By default the run stops
each benchmark once it is decided and the run once all are, at most
--max-trials 100 rounds of each, a change within --threshold 5% counting
as none; --trials N runs N rounds instead (raised to the fewest with which
the suite can report anything: the signed-rank floor 2/2ⁿ below alpha/k
for k benchmarks). Families of tests, each corrected on its own by
Benjamini and Hochberg (the share of false reports among those reported):
time (each benchmark's ns/op, its one tested metric), alloc (B/op and
allocs/op) and custom (b.ReportMetric units), the last two only where not
the same in every round; MB/s is ns/op in other units, shown, not tested
(--metrics picks the families, --metrics all tests every metric in one).
Names carry their package (decimal.AppendFloat/Integers); the GOMAXPROCS
suffix all of them share is left out, and said once.

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

Manual: docs/suite.md

Flags:
`

// suiteFlags are perflab suite's flags.
type suiteFlags struct {
	base, head, bench, benchtime, measure, stop  *string
	metrics                                      *string
	trials, maxTrials, workers, parallel, warmup *int
	trim                                         *float64
	aa, agree, asJSON, useTUI, quiet, markdown   *bool
	wide                                         *bool
	workerSpecs                                  repeatedFlag
	workersFile, out, shard                      *string
	seed                                         *int64
	threshold                                    float64
	acc                                          deviceAccess
	workersSet                                   bool // --workers given
	trialsSet, thresholdSet                      bool // --trials, --threshold given
}

func newSuiteFlags(fs *flag.FlagSet) *suiteFlags {
	f := &suiteFlags{}
	f.base = fs.String("base", "", "the base revision (A; default: the merge-base with origin's default branch, else HEAD~1)")
	f.head = fs.String("head", "", "the revision compared with it (B; default: the work tree)")
	f.bench = fs.String("bench", ".", "run the benchmarks matching `REGEXP` (as go test -bench)")
	f.benchtime = fs.String("benchtime", "", "each benchmark's run per round, as go test -benchtime (a duration, or Nx; default 10ms, with --measure cachegrind 1000x: many short runs, not a few long ones, so that a rare disturbance slows one run, which the trimmed mean sets aside, rather than every run a little)")
	f.measure = fs.String("measure", "time", "time (go test's own numbers) or cachegrind (instructions and estimated cycles per iteration under valgrind, each sub-benchmark a row: nearly deterministic, for noisy CI runners)")
	f.trials = fs.Int("trials", 10, "rounds of each benchmark (a round: one run of it for A and one for B, side by side); given, the run has this many (--stop fixed), raised to the fewest with which the family can report a change")
	f.stop = fs.String("stop", "", "auto (the default without --trials: stop each benchmark once decided and the run once all are, at the latest at --max-trials) or fixed (run --trials rounds; the default with --trials)")
	f.maxTrials = fs.Int("max-trials", 0, "with --stop auto: at most this many rounds of each benchmark (default: 100, or --trials when given)")
	f.metrics = fs.String("metrics", lab.DefaultSuiteMetrics, "the families of tests, each corrected on its own: a comma list of time (each benchmark's time per op), alloc (B/op and allocs/op) and custom (b.ReportMetric units), or all (every metric in one family); rates (MB/s) are shown, never tested")
	f.workers = fs.Int("workers", 1, "local workers running rounds side by side (a pool: local, local#2, ...; the analysis blocks on worker); for benchmarks that wait more than they compute, or cores to spare")
	f.parallel = fs.Int("parallel", 0, "N local workers, each pinned to its own CPUs (the host's split into N sets, taskset): for CPU-bound benchmarks on a many-core host; a warning when N exceeds the CPUs")
	f.aa = fs.Bool("aa", false, "A/A: the --head revision (default: the work tree) against itself, two builds of it: every benchmark reported changed is a false positive")
	f.agree = fs.Bool("agree", false, "perflab suite --agree SESSION1 SESSION2: on how many benchmarks two suite runs agree (ElastiBench's measure), nothing run")
	fs.Var(&f.workerSpecs, "worker", "a worker running rounds: ssh://ALIAS or ssh://[USER@]HOST[:PORT] (reached as `ssh ALIAS` reaches it), adb:SERIAL or adb:model=MODEL (a phone of the --adb servers), local, local#N; repeatable")
	f.workersFile = fs.String("workers-file", "", "a `FILE` listing workers, one a line (# comments)")
	f.acc.register(fs)
	f.warmup = fs.Int("warmup", 1, "warm-up rounds, recorded but not analysed")
	f.seed = fs.Int64("seed", 1, "seed of the rounds' order")
	f.trim = fs.Float64("trim", analysis.DefaultSuiteTrim, "with --stop auto: the share of a benchmark's per-round log ratios cut from each end before the sequential test (0.2: their 20% trimmed mean, robust to the rare run a context switch or page faults slow; 0: their mean; at most 0.25)")
	fs.Var(percentFlag{&f.threshold}, "threshold", "practical threshold, e.g. 2%: a change whose CI lies within ±threshold is no change")
	f.out = fs.String("out", "", "session `FILE` (default: $XDG_DATA_HOME/perflab/sessions/ID.jsonl)")
	f.asJSON = fs.Bool("json", false, "print the report as JSON (report --json schema)")
	f.wide = fs.Bool("wide", false, "print every column of the table (units, medians, raw p, each reason a row is not tested) however wide; the table fits the terminal without it")
	f.markdown = fs.Bool("markdown", false, "print a GitHub-flavoured summary instead of the table (changed benchmarks first; for a pull-request comment or $GITHUB_STEP_SUMMARY)")
	f.useTUI = fs.Bool("tui", false, "watch the suite in the workbench (the run dashboard: a row per benchmark metric, the changed ones on top, ↑/↓ to scroll; enter starts it)")
	f.quiet = fs.Bool("quiet", false, "no progress on stderr")
	f.shard = fs.String("shard", "", "run shard `K/N` of the benchmarks (split evenly by --seed; every shard both revisions, e.g. one CI job each); perflab merge joins the shards' sessions into one report")
	return f
}

// check says what is wrong with the flags (exit status 2, or 1 for what
// this host lacks), and fills in the defaults that depend on others.
func (f *suiteFlags) check(fs *flag.FlagSet, stderr io.Writer) (int, bool) {
	fail := func(code int, format string, args ...any) (int, bool) {
		fmt.Fprintf(stderr, "perflab suite: "+format+"\n", args...)
		return code, false
	}
	fs.Visit(func(fl *flag.Flag) {
		f.workersSet = f.workersSet || fl.Name == "workers"
		f.trialsSet = f.trialsSet || fl.Name == "trials"
		f.thresholdSet = f.thresholdSet || fl.Name == "threshold"
	})
	if *f.stop == "" {
		*f.stop = map[bool]string{true: lab.StopFixed, false: lab.StopAuto}[f.trialsSet]
	}
	switch {
	case *f.aa && *f.base != "":
		return fail(exitUsage, "--aa compares --head with itself: give no --base")
	case *f.markdown && *f.asJSON:
		return fail(exitUsage, "--markdown and --json: give one")
	case *f.measure != "time" && *f.measure != "cachegrind":
		return fail(exitUsage, "--measure %q: want time or cachegrind", *f.measure)
	case *f.measure == "cachegrind" && *f.benchtime != "" && !strings.HasSuffix(*f.benchtime, "x"):
		return fail(exitUsage, "--benchtime %s: with --measure cachegrind give a count of iterations (e.g. 100x): a time under valgrind measures nothing fixed", *f.benchtime)
	case f.rangeError() != "":
		return fail(exitUsage, "%s", f.rangeError())
	case *f.parallel > 0 && f.workersSet:
		return fail(exitUsage, "--parallel N pins N local workers, --workers N leaves them free: give one")
	case *f.stop != lab.StopAuto && *f.stop != lab.StopFixed:
		return fail(exitUsage, "--stop %q: want auto or fixed", *f.stop)
	}
	if err := lab.CheckSuiteMetrics(*f.metrics); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if *f.shard != "" {
		if _, err := parseShard(*f.shard); err != nil {
			return fail(exitUsage, "%v", err)
		}
	}
	if *f.stop == lab.StopAuto && !f.thresholdSet {
		f.threshold = defaultSuiteThreshold
	}
	if _, err := regexp.Compile(*f.bench); err != nil {
		return fail(exitUsage, "-bench %q: %v", *f.bench, err)
	}
	if *f.benchtime == "" {
		*f.benchtime = map[bool]string{true: "1000x", false: defaultSuiteBenchtime}[*f.measure == "cachegrind"]
	}
	f.workersWarning(stderr)
	return 0, true
}

// workersWarning takes --parallel N as N workers and warns when the
// local workers are more than this host's CPUs can keep apart.
func (f *suiteFlags) workersWarning(stderr io.Writer) {
	if *f.parallel > 0 {
		*f.workers, f.workersSet = *f.parallel, true
		if *f.parallel > runtime.NumCPU() {
			fmt.Fprintf(stderr, "perflab suite: warning: --parallel %d on a host of %d CPUs: workers share CPUs and CPU-bound benchmarks disturb each other (at most %d can be isolated)\n", *f.parallel, runtime.NumCPU(), runtime.NumCPU())
		}
	} else if w := *f.workers; w > 1 && 2*w > runtime.NumCPU() {
		fmt.Fprintf(stderr, "perflab suite: warning: --workers %d on a host of %d CPUs: the workers' benchmarks run at once on shared CPUs (each Go benchmark uses every CPU), so CPU-bound ones disturb each other: their times rise and spread, the intervals widen; --workers suits benchmarks that wait more than they compute, --parallel N pins each worker to its own CPUs on a larger host\n",
			w, runtime.NumCPU())
	}
}

// cmdSuite runs a Go module's benchmarks of two revisions as one session.
func cmdSuite(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	f := newSuiteFlags(fs)
	pos, code, ok := parseCommandFlags(fs, args, suiteUsage, stdout, stderr)
	if !ok {
		return code
	}
	if *f.agree {
		return suiteAgree(pos, *f.asJSON, stdout, stderr)
	}
	if code, ok := f.check(fs, stderr); !ok {
		return code
	}
	pkgs := pos
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	ids, err := suiteWorkers(*f.workers, f.workersSet, f.workerSpecs, *f.workersFile)
	if err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitUsage
	}
	if !f.acc.openOr(ctx, "perflab suite", stderr) {
		return exitError
	}
	defer f.acc.close()
	devOpt := f.acc.options()
	devOpt.Seed, devOpt.PinWorkers = *f.seed, *f.parallel
	if ids, err = devices.Resolve(ctx, ids, devOpt); err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	if *f.measure == "cachegrind" && slices.ContainsFunc(ids, devices.IsLocal) {
		if _, err := exec.LookPath("valgrind"); err != nil {
			fmt.Fprintln(stderr, "perflab suite: --measure cachegrind needs valgrind on this host (apt-get install valgrind)")
			return exitError
		}
	}
	platforms, err := workerPlatforms(ctx, ids, devOpt, *f.measure == "cachegrind", stderr)
	if err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	shard, _ := parseShard(*f.shard)
	s, err := prepareSuite(ctx, suiteConfig{base: *f.base, head: *f.head, bench: *f.bench, benchtime: *f.benchtime, pkgs: pkgs,
		cachegrind: *f.measure == "cachegrind", platforms: platforms, aa: *f.aa, seed: *f.seed, shard: shard}, stderr)
	if s != nil {
		defer s.cleanup()
	}
	if err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	s.info.Metrics = *f.metrics
	// The plan's lines, wrapped to the terminal's width.
	var plan strings.Builder
	f.plan(s, &plan)
	io.WriteString(stderr, fitProse(plan.String(), fitWidth(stderr, *f.wide)))
	exp := f.experiment(s, ids)
	if err := exp.Validate(); err != nil {
		fmt.Fprintln(stderr, "perflab suite:", err)
		return exitError
	}
	if *f.useTUI {
		return f.openTUI(ctx, exp, s, stdout, stderr)
	}
	r := &headlessRun{cmd: "perflab suite", stdout: stdout, stderr: stderr, quiet: *f.quiet, json: *f.asJSON, markdown: *f.markdown,
		width: fitWidth(stdout, *f.wide)}
	return r.run(ctx, engine.Plan{Experiment: *exp, Tool: "perflab " + version, Source: "perflab suite", Path: *f.out,
		HandOffEvery: headlessHandOff}, deviceLab(devOpt))
}

// The defaults of stop auto for a CI job: at most defaultSuiteCap rounds
// of each benchmark, and a change within ±defaultSuiteThreshold% is no
// change (without a threshold an unchanged benchmark is never decided and
// every one runs to the cap). At 10 ms a run, 100 rounds of 51
// benchmarks took about 4 minutes here; at 30, rounds whose log ratios
// spread by 8% (this host on a busy day) were decided within ±5% in 3% of
// runs, at 100 in 98% (analysis: the group-sequential design at the
// family's level).
const (
	defaultSuiteCap       = 100
	defaultSuiteThreshold = 5
	// defaultSuiteBenchtime is each run's -test.benchtime. On this
	// project's 2-core VM one benchmark's runs varied more at 100ms than
	// at 10ms, back to back (coefficient of variation 16.8% against 4.5%,
	// and 23% against 13% a minute later): a long run meets every
	// disturbance of the host a little, a short one meets few, and the
	// one it meets makes it an outlier the trimmed mean sets aside
	// (docs/suite.md).
	defaultSuiteBenchtime = "10ms"
)

// plan raises the rounds to the fewest with which the time family can
// report anything (lab.SuiteMinRounds: the exact signed-rank floor against
// Benjamini–Hochberg's first step), and says the plan before the first
// round: the families, the stop rule with its cap and threshold.
func (f *suiteFlags) plan(s *suitePrep, stderr io.Writer) {
	// A shard's benchmarks are tested with the other shards' when merged.
	k := max(s.build[0].Bench.Count(), s.info.ShardOf, 1)
	alpha := lab.DefaultAlpha
	need := lab.SuiteMinRounds(alpha, k)
	fams := *f.metrics
	if fams == lab.FamiliesAll {
		fams = "every metric in one family"
	}
	fmt.Fprintf(stderr, "tested: %s, each family corrected on its own (Benjamini–Hochberg, alpha %g); rates (MB/s) shown, not tested\n", fams, alpha)
	if *f.stop == lab.StopFixed {
		if *f.trials < need {
			fmt.Fprintf(stderr, "rounds raised from %d to %d: with %d benchmarks the smallest signed-rank p of n rounds, 2/2ⁿ, must be below %g/%d before any change can be reported\n",
				*f.trials, need, k, alpha, k)
			*f.trials = need
		}
		fmt.Fprintf(stderr, "plan: %d rounds of each benchmark (--stop fixed); %d are the fewest with which %d benchmarks can report a change (more sub-benchmarks need more: the report says so)\n",
			*f.trials, need, k)
	} else {
		capPer := f.roundsCap()
		if capPer < need {
			fmt.Fprintf(stderr, "cap raised from %d to %d rounds: with %d benchmarks the smallest signed-rank p of n rounds, 2/2ⁿ, must be below %g/%d\n", capPer, need, k, alpha, k)
			*f.maxTrials = need
			capPer = need
		}
		th := "none: only a change decides, an unchanged benchmark runs to the cap"
		if f.threshold > 0 {
			th = fmt.Sprintf("±%g%% is no change", f.threshold)
		}
		est := "the rounds' mean log ratio (--trim 0)"
		if *f.trim > 0 {
			est = fmt.Sprintf("the rounds' %g%% trimmed mean log ratio (--trim)", *f.trim*100)
		}
		fmt.Fprintf(stderr, "plan: stop each benchmark when decided and the run when all are (--stop auto), at most %d rounds of each (--max-trials), threshold %s (--threshold), on %s; --trials N runs N rounds instead\n",
			capPer, th, est)
	}
	fmt.Fprintln(stderr, "the smallest change this plan can detect is not known before the noise is: the report gives each benchmark's (mde)")
}

// rangeError says which numeric flag is out of its range, or "".
func (f *suiteFlags) rangeError() string {
	switch {
	case *f.workers < 1 || *f.workers > 64:
		return fmt.Sprintf("--workers %d: want 1 to 64", *f.workers)
	case *f.parallel < 0 || *f.parallel > 64:
		return fmt.Sprintf("--parallel %d: want 1 to 64", *f.parallel)
	case *f.trim < 0 || *f.trim > analysis.MaxTrim:
		return fmt.Sprintf("--trim %g: want 0 to %g (the share cut from each end)", *f.trim, analysis.MaxTrim)
	case *f.trials < 2:
		return fmt.Sprintf("--trials %d: want at least 2 rounds", *f.trials)
	}
	return ""
}

// roundsCap is stop auto's most rounds of a benchmark: --max-trials, else
// --trials when given, else defaultSuiteCap; never below --trials given.
func (f *suiteFlags) roundsCap() int {
	c := *f.maxTrials
	if c == 0 {
		c = defaultSuiteCap
		if f.trialsSet {
			c = *f.trials
		}
	}
	if f.trialsSet {
		c = max(c, *f.trials)
	}
	return c
}

// experiment is the suite's session plan: the two sides' builds in
// random order on the workers ids.
func (f *suiteFlags) experiment(s *suitePrep, ids []string) *lab.Experiment {
	// A round runs one benchmark for A and for B: --trials rounds of each.
	k := max(s.build[0].Bench.Count(), 1)
	exp := &lab.Experiment{Device: "local", Order: lab.OrderRandom, Trials: *f.trials * k, Warmup: *f.warmup, Seed: *f.seed,
		Alpha: lab.DefaultAlpha, Confidence: lab.DefaultConfidence,
		Threshold: f.threshold, Suite: &s.info,
		Builds: map[string]lab.Build{lab.ArmControl: s.build[0], lab.ArmTreatment: s.build[1]}}
	exp.Stop = *f.stop
	if *f.stop == lab.StopAuto {
		exp.SequentialTrim = *f.trim
		exp.MaxTrials = f.roundsCap() * k
		exp.Trials = min(exp.Trials, exp.MaxTrials)
	}
	if len(ids) > 1 || ids[0] != "local" {
		exp.SetDevices(ids)
	}
	return exp
}

// openTUI runs the suite in the workbench, which runs experiment files:
// the suite's, beside its binaries (removed when the workbench quits).
func (f *suiteFlags) openTUI(ctx context.Context, exp *lab.Experiment, s *suitePrep, stdout, stderr io.Writer) int {
	data, err := json.MarshalIndent(exp, "", "  ")
	if err == nil {
		path := filepath.Join(s.tmp, "suite.json")
		if err = os.WriteFile(path, data, 0o644); err == nil {
			var args []string
			if *f.out != "" {
				args = []string{"--out", *f.out}
			}
			return openRunTUI(ctx, "perflab suite", path, args, stdout, stderr)
		}
	}
	fmt.Fprintln(stderr, "perflab suite:", err)
	return exitError
}

// parseShard reads --shard K/N ({0, 0} for "").
func parseShard(v string) ([2]int, error) {
	if v == "" {
		return [2]int{}, nil
	}
	var k, n int
	if c, err := fmt.Sscanf(v, "%d/%d", &k, &n); err != nil || c != 2 || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != v {
		return [2]int{}, fmt.Errorf("--shard %q: want K/N with 1 ≤ K ≤ N, e.g. 2/4", v)
	}
	return [2]int{k, n}, nil
}
