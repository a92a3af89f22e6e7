package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/perflab/perflab/lab"
	"github.com/perflab/perflab/lab/local"
)

type suiteConfig struct {
	base, head, bench, benchtime string
	pkgs                         []string
	cachegrind                   bool
	aa                           bool  // the head against itself
	seed                         int64 // the passes' orders (lab.BenchSpec.Seed)
	// shard is --shard K/N: this run's share of the benchmarks (K of N,
	// from 1), {0, 0} for all of them.
	shard [2]int
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
	owner     *os.File // tmp's owner file, flocked while the suite runs (markSuiteTmp)
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
	if s.owner != nil {
		s.owner.Close() // drops its flock
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
	removeSuiteLeftovers(ctx, top, stderr)
	if s.tmp, err = os.MkdirTemp("", suiteTmpPrefix); err != nil {
		return s, err
	}
	if s.owner, err = markSuiteTmp(s.tmp); err != nil {
		return s, err
	}
	s.bundle = filepath.Join(s.tmp, "bundle")
	if len(c.platforms) == 0 {
		c.platforms = []string{lab.HostPlatform()}
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
				msg := fmt.Sprintf("revision %q does not exist in %s", spec.rev, top)
				if n, err := output(ctx, top, "git", "rev-list", "--count", "HEAD"); err == nil {
					msg += fmt.Sprintf(" (HEAD has %s %s)", n, map[bool]string{true: "commit", false: "commits"}[n == "1"])
				}
				if i == 0 {
					msg += "; name the base with --base REV (--base HEAD: the work tree against the last commit), or compare a revision with itself with --aa"
				}
				return s, errors.New(msg)
			}
			// A name of this run's own (git names the worktree's entry in
			// .git/worktrees after its folder), added under the
			// checkout's worktree lock (worktreeAdd).
			wt := filepath.Join(s.tmp, []string{"base", "head"}[i]+"-"+filepath.Base(s.tmp))
			if out, err := worktreeAdd(ctx, top, wt, commit); err != nil {
				return s, fmt.Errorf("git worktree add %s: %v: %s", spec.rev, err, strings.TrimSpace(string(out)))
			}
			s.worktrees = append(s.worktrees, wt)
			side.rev, side.dir = commit, filepath.Join(wt, rel)
			side.label = fmt.Sprintf("%s %.7s", spec.name, commit)
		}
		if c.aa {
			side.label += []string{" (A)", " (B)"}[i]
		}
		if c.aa {
			fmt.Fprintf(stderr, "building %s\n", side.label) // the label says A or B
		} else {
			fmt.Fprintf(stderr, "building %s (%s)\n", side.label, []string{"A", "B"}[i])
		}
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
			// -trimpath: the checkouts' own paths, which differ between
			// the two sides (and between the two builds of --aa), stay
			// out of the binaries, so one revision builds the same bytes
			// wherever it is checked out. Without it, an A/A run of
			// VictoriaMetrics' stringsutil reported two benchmarks +25%
			// and +27% over 85 rounds, and with it +0.1% and +0.35%
			// (docs/suite.md): a difference of the build folders, not of
			// the code.
			cmd := exec.CommandContext(ctx, "go", "test", "-trimpath", "-c", "-o", filepath.Join(dir, name), f[0])
			cmd.Dir = side.dir
			if j > 0 || plat != lab.HostPlatform() {
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
		specs[i].Benchtime, specs[i].Seed = c.benchtime, c.seed
		if c.cachegrind {
			// One process per benchmark under valgrind, each its own
			// instructions and estimated cycles (suite-cachegrind), run
			// by a copy of this perflab at the bundle's top, on every
			// worker alike.
			specs[i].Wrapper = []string{suitePerflab, suiteCachegrindCmd}
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
	fmt.Fprintln(stderr, fitProse(fmt.Sprintf("%d benchmark functions in both revisions (their sub-benchmarks are rows of their own)", n), fitWidth(stderr, false)))
	if c.shard[1] > 0 {
		kept := shardSpecs(&specs, c.shard, c.seed)
		if kept == 0 {
			return fmt.Errorf("shard %d/%d has no benchmark: %d benchmark functions for %d shards", c.shard[0], c.shard[1], n, c.shard[1])
		}
		fmt.Fprintf(stderr, "shard %d/%d: %d of the %d benchmark functions (split by --seed %d; perflab merge joins the shards' sessions)\n", c.shard[0], c.shard[1], kept, n, c.seed)
		s.info.Shard, s.info.ShardOf = fmt.Sprintf("%d/%d", c.shard[0], c.shard[1]), n
	}
	if c.cachegrind {
		if err := copySelf(filepath.Join(s.bundle, c.platforms[0], suitePerflab)); err != nil {
			return fmt.Errorf("--measure cachegrind: %w", err)
		}
	}
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

// suitePerflab is perflab's copy in a cachegrind suite's bundle.
const suitePerflab = "perflab"

// copySelf puts this perflab's executable at dst: a hard link when it
// can, else a copy.
func copySelf(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if os.Link(self, dst) == nil {
		return nil
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// suiteCachegrindCmd is the hidden command a cachegrind suite's trials
// run: each benchmark (each sub-benchmark on its own) under valgrind,
// printed as go test -bench lines of its instructions and estimated
// cycles per iteration.
const suiteCachegrindCmd = "__suite-cachegrind"

// cmdSuiteCachegrind is suiteCachegrindCmd: perflab __suite-cachegrind
// --pkg PKG --benchtime Nx BINARY NAME... (NAME without "Benchmark").
// Each benchmark's sub-benchmarks are listed by a run at 1x (not under
// valgrind), and each is counted twice under valgrind, at N and at 2N
// iterations: go test runs a benchmark once at b.N = 1 and then at b.N =
// N, so the difference of the two counts is N iterations of the
// benchmark's own loop — the process's start-up, the test binary's setup
// and the benchmark's own before its loop cancel out — and a +20% change
// of the loop's work reads +20%.
func cmdSuiteCachegrind(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(suiteCachegrindCmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	pkg := fs.String("pkg", "", "the package, for the pkg: line")
	benchtime := fs.String("benchtime", "1000x", "iterations")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 {
		fmt.Fprintln(stderr, "usage: perflab "+suiteCachegrindCmd+" --pkg PKG --benchtime Nx BINARY NAME...")
		return exitUsage
	}
	n, err := strconv.Atoi(strings.TrimSuffix(*benchtime, "x"))
	if err != nil || n < 1 || !strings.HasSuffix(*benchtime, "x") {
		fmt.Fprintf(stderr, "perflab suite: --benchtime %q: want a count of iterations, e.g. 100x\n", *benchtime)
		return exitUsage
	}
	bin := fs.Arg(0)
	// One processor: the Go scheduler's idle spinning otherwise makes the
	// instruction count vary by tens of percent between runs (measured
	// here: 11.6–14.6M against 8.56–8.66M with GOMAXPROCS=1).
	os.Setenv("GOMAXPROCS", "1")
	fmt.Fprintf(stdout, "pkg: %s\n", *pkg)
	for _, name := range fs.Args()[1:] {
		subs, err := benchNames(ctx, bin, name)
		if err != nil {
			fmt.Fprintln(stderr, "perflab suite:", err)
			return exitError
		}
		for _, full := range subs {
			var pattern []string
			for _, e := range strings.Split(full, "/") {
				pattern = append(pattern, "^"+regexp.QuoteMeta(e)+"$")
			}
			pattern[0] = "^Benchmark" + pattern[0][1:]
			var ir, cost [2]float64
			for i, iters := range []int{n, 2 * n} {
				ir[i], cost[i], _, err = local.Cachegrind(ctx, ".", []string{bin, "-test.run=^$", "-test.bench=" + strings.Join(pattern, "/"),
					fmt.Sprintf("-test.benchtime=%dx", iters), "-test.count=1"})
				if err != nil {
					fmt.Fprintln(stderr, "perflab suite:", err)
					return exitError
				}
			}
			fmt.Fprintf(stdout, "Benchmark%s %d %.2f instructions/op %.2f est-cycles/op\n", full, n, (ir[1]-ir[0])/float64(n), (cost[1]-cost[0])/float64(n))
		}
	}
	return exitOK
}

// benchNames lists the benchmark name's results (itself, or its
// sub-benchmarks, "Name/sub") from a run of it at 1x.
func benchNames(ctx context.Context, bin, name string) ([]string, error) {
	out, err := exec.CommandContext(ctx, bin, "-test.run=^$", "-test.bench=^Benchmark"+regexp.QuoteMeta(name)+"$", "-test.benchtime=1x", "-test.count=1").Output()
	if err != nil {
		return nil, fmt.Errorf("listing Benchmark%s's sub-benchmarks: %v", name, err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		full := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(full, '-'); i > 0 && !strings.Contains(full[i:], "/") {
			if _, err := strconv.Atoi(full[i+1:]); err == nil {
				full = full[:i] // a GOMAXPROCS suffix (none at 1)
			}
		}
		names = append(names, full)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("Benchmark%s printed no result at 1x", name)
	}
	return names, nil
}

// shardSpecs keeps in both specs only shard K of N of their benchmarks:
// the benchmarks (package and name, the listing's order) drawn into an
// order by seed and dealt out in turn, so the shards differ in size by
// one at most and every benchmark is in exactly one. It returns how many
// are kept.
func shardSpecs(specs *[2]lab.BenchSpec, shard [2]int, seed int64) int {
	type ref struct{ pkg, name string }
	var all []ref
	for _, p := range specs[0].Packages {
		for _, b := range p.Benchmarks {
			all = append(all, ref{p.Path, b})
		}
	}
	perm := rand.New(rand.NewPCG(uint64(seed), 0x5ad)).Perm(len(all))
	keep := map[ref]bool{}
	for i, j := range perm {
		if i%shard[1] == shard[0]-1 {
			keep[all[j]] = true
		}
	}
	for i := range specs {
		var pkgs []lab.BenchPackage
		for _, p := range specs[i].Packages {
			var bs []string
			for _, b := range p.Benchmarks {
				if keep[ref{p.Path, b}] {
					bs = append(bs, b)
				}
			}
			if len(bs) > 0 {
				p.Benchmarks = bs
				pkgs = append(pkgs, p)
			}
		}
		specs[i].Packages = pkgs
	}
	return len(keep)
}

// worktreeAdd runs git worktree add --detach wt commit in the checkout
// top while holding an exclusive flock on perflab-worktree.lock in its git
// folder. git worktree add reads every worktree's entry in .git/worktrees
// while it writes its own, so suites started side by side in one checkout
// (shards on one host) failed one another: "fatal: failed to read
// .git/worktrees/base-…/commondir" (TestSuiteFourShardsMatchFourWorkers,
// 2 of 7 runs before the lock). The lock waits for the other suite's add,
// a fraction of a second.
func worktreeAdd(ctx context.Context, top, wt, commit string) ([]byte, error) {
	common, err := output(ctx, top, "git", "rev-parse", "--git-common-dir")
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(top, common)
	}
	f, err := os.OpenFile(filepath.Join(common, "perflab-worktree.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // closing lets the lock go
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, "git", "-C", top, "worktree", "add", "--detach", wt, commit).CombinedOutput()
}
