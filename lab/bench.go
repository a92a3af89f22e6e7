package lab

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/perflab/perflab/analysis/parse"
	"github.com/perflab/perflab/lab/shquote"
)

// HostPlatform is this host's GOOS_GOARCH, as a suite's bundle folders
// and a worker's Platform name platforms (linux_amd64).
func HostPlatform() string { return runtime.GOOS + "_" + runtime.GOARCH }

// OutputGoBench is Build.Output for a command that prints `go test -bench`
// results: every value–unit pair of every result line is a metric.
const OutputGoBench = "gobench"

// BenchSpec is a benchmark suite's build (perflab suite): Go test binaries
// whose benchmarks each trial runs, one process per benchmark, in an order
// drawn for the round, skipping the benchmarks the run has decided
// (Experiment "stop": "auto"). The runner turns it into the trial's
// command (TrialCommand); Build.Command holds the whole suite in listing
// order, for the record and for devices that run a build as it is.
type BenchSpec struct {
	// Benchtime is every run's -test.benchtime (a duration, or Nx).
	Benchtime string `json:"benchtime"`
	// Seed draws the passes' orders (TrialCommand): the suite's own, the
	// same on every worker of a pool (whose runners draw the arms' order
	// each with a seed of its own).
	Seed int64 `json:"seed"`
	// Packages are the test binaries, relative to the build's folder
	// (Build.Dir; Build.Files on a remote worker).
	Packages []BenchPackage `json:"packages"`
	// Wrapper, when set, runs a package's benchmarks itself (the
	// cachegrind mode): the trial runs Wrapper --pkg PKG --benchtime T
	// ./BINARY NAME... in the package's folder, NAMEs without
	// "Benchmark". A relative Wrapper[0] is a path from the build's
	// folder (Build.Dir, or its copy on a remote worker).
	Wrapper []string `json:"wrapper,omitempty"`
}

// BenchPackage is one package's test binary and the benchmarks compared.
type BenchPackage struct {
	Path       string   `json:"path"`       // import path, for the pkg: line
	Dir        string   `json:"dir"`        // folder the binary runs in (its testdata beside it)
	Binary     string   `json:"binary"`     // file name in Dir
	Benchmarks []string `json:"benchmarks"` // names without "Benchmark"
}

// benchRef is one benchmark of a spec.
type benchRef struct {
	pkg  int
	name string
}

// refs lists the spec's benchmarks in listing order.
func (s *BenchSpec) refs() []benchRef {
	var out []benchRef
	for i, p := range s.Packages {
		for _, b := range p.Benchmarks {
			out = append(out, benchRef{i, b})
		}
	}
	return out
}

// Count is the number of benchmarks.
func (s *BenchSpec) Count() int { return len(s.refs()) }

// BenchOfMetric is the benchmark a suite metric belongs to: the metric's
// name up to its sub-benchmark ("/") or unit (":"), without go test's
// GOMAXPROCS suffix ("-8"; a Go identifier has no "-", so the suffix is
// the only one), package-qualified as the metric is when a name is in two
// packages.
func BenchOfMetric(metric string) string {
	if i := strings.IndexAny(metric, "/:"); i >= 0 {
		metric = metric[:i]
	}
	if i := strings.LastIndexByte(metric, '-'); i >= 0 && i > strings.LastIndexByte(metric, '.') {
		if _, err := strconv.Atoi(metric[i+1:]); err == nil {
			metric = metric[:i]
		}
	}
	return metric
}

// TrialCommand is the command of one counted trial: one benchmark, the
// round's, each round a pair of one run of it for A and one for B
// (ElastiBench's rounds: both arms of a benchmark side by side, in random
// order within the round). Rounds go through the benchmarks in passes,
// each pass in an order drawn from seed and the pass (randomized multiple
// interleaved trials, Abedi & Brecht) drawn from the spec's Seed: the
// counted round r of K benchmarks is pass r/K, place r mod K. A benchmark not in wanted (decided, with "stop":
// "auto") is skipped for the next wanted one of the pass's order, so the
// undecided ones get the rounds. wanted nil is all of them.
func (s *BenchSpec) TrialCommand(round int, wanted map[string]bool) []string {
	refs := s.refs()
	if len(refs) == 0 {
		return []string{"sh", "-c", "true"}
	}
	k := len(refs)
	pass, place := round/k, round%k
	rng := rand.New(rand.NewPCG(uint64(s.Seed), uint64(pass)+0x9e3779b97f4a7c15))
	rng.Shuffle(k, func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
	for i := range k {
		r := refs[(place+i)%k]
		if wanted == nil || s.isWanted(r, wanted) {
			return []string{"sh", "-c", s.script([]benchRef{r})}
		}
	}
	// None is wanted: every benchmark is decided or at its cap, and the
	// run is ending (a round a pool handed out before it knew).
	return []string{"sh", "-c", "echo " + shquote.Quote(benchNoneLeft)}
}

// benchNoneLeft is what a suite's trial prints when no benchmark is left
// to run (SuiteMetrics: an OK trial without metrics).
const benchNoneLeft = "perflab: no benchmark left to run: every one decided or at its cap"

// isWanted reports whether r is in wanted (a name in two packages is
// qualified by its package, as analysis/parse names it).
func (s *BenchSpec) isWanted(r benchRef, wanted map[string]bool) bool {
	return wanted[r.name] || wanted[path.Base(s.Packages[r.pkg].Path)+"."+r.name]
}

// WarmupCommand runs every benchmark once for one iteration (1x), in the
// listing's order: it pages in the binaries and their data at the cost of
// their start-up.
func (s *BenchSpec) WarmupCommand() []string {
	w := *s
	w.Benchtime = "1x"
	return w.ListingCommand()
}

// ListingCommand is the command of the whole suite in listing order.
func (s *BenchSpec) ListingCommand() []string {
	return []string{"sh", "-c", s.script(s.refs())}
}

// script is the shell script running refs, each in its package's folder
// (the test binary prints its own pkg: line, which tells a name in two
// packages apart).
func (s *BenchSpec) script(refs []benchRef) string {
	var lines []string
	for _, r := range refs {
		p := s.Packages[r.pkg]
		dir, bin := shquote.Quote(p.Dir), shquote.Quote("./"+p.Binary)
		var run string
		if len(s.Wrapper) > 0 {
			args := append(slices.Clone(s.Wrapper), "--pkg", p.Path, "--benchtime", s.Benchtime, "./"+p.Binary, r.name)
			args[0] = fromPackage(p.Dir, args[0])
			quoted := make([]string, len(args))
			for i, a := range args {
				quoted[i] = shquote.Quote(a)
			}
			run = strings.Join(quoted, " ")
		} else {
			run = fmt.Sprintf("%s -test.run='^$' -test.bench=%s -test.benchtime=%s -test.count=1 -test.benchmem", bin,
				shquote.Quote("^Benchmark"+regexp.QuoteMeta(r.name)+"$"), shquote.Quote(s.Benchtime))
		}
		fail := shquote.Quote(fmt.Sprintf("%s %s.%s failed, exit status", benchFailedPrefix, p.Path, r.name))
		lines = append(lines, fmt.Sprintf("(cd %s && exec %s) || echo %s $?", dir, run, fail))
	}
	if len(lines) == 0 {
		return "true"
	}
	return strings.Join(lines, "\n")
}

// fromPackage is path, relative to the build's folder when not
// absolute, as seen from the package's folder dir (inside it) where the
// trial runs: "perflab" from "a/pkg0" is "../../perflab".
func fromPackage(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	up, err := filepath.Rel(dir, ".")
	if err != nil {
		return path
	}
	if p := filepath.Join(up, path); strings.Contains(p, "/") {
		return p
	}
	return "./" + path // not looked up in PATH
}

// benchFailedPrefix starts the line a suite's trial prints on stdout for
// a benchmark that failed (BenchFailures reads them).
const benchFailedPrefix = "perflab: benchmark"

// BenchFailures is what a suite's trial output says of its failed
// benchmarks ("PKG.NAME failed, exit status N", joined by "; "), "" when
// none failed: the trial is still OK with the others' metrics, and the
// report warns of it (sessions.TrialNotes).
func BenchFailures(out []byte) string {
	var fails []string
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), benchFailedPrefix+" "); ok {
			fails = append(fails, "benchmark "+rest)
		}
	}
	return strings.Join(fails, "; ")
}

// errNoBenchResults is GoBenchMetrics's error for output without a
// result line.
var errNoBenchResults = errors.New("benchmark output: no result lines (no benchmark matched, or it failed: see the trial's stderr)")

// GoBenchMetrics reads a trial's `go test -bench` output: every value–unit
// pair of every result line is a metric (benchstat's reading, through
// analysis/parse), named by the benchmark, with ":UNIT" for units other
// than ns/op and sec/op; a benchmark run more than once in the trial is
// one metric per run, which the analysis refuses (a trial is one run).
func GoBenchMetrics(out []byte) ([]Metric, error) {
	f, err := parse.GoBench("stdout", out)
	if err != nil {
		return nil, fmt.Errorf("benchmark output: %v", err)
	}
	if len(f.Metrics) == 0 {
		return nil, errNoBenchResults
	}
	var ms []Metric
	for _, m := range f.Metrics {
		if len(m.Values) != 1 {
			return nil, fmt.Errorf("benchmark %s: %d results in one trial, want 1 (-test.count=1)", m.Name, len(m.Values))
		}
		name := m.Name
		if m.Unit != "ns/op" && m.Unit != "sec/op" {
			name += ":" + m.Unit
		}
		ms = append(ms, Metric{Name: name, Value: m.Values[0], Unit: m.Unit, Better: m.Better})
	}
	return ms, nil
}

// CommandResult is the result of a command build's trial on a device
// that only runs it (an ssh worker, a phone) from its stdout: `go test
// -bench` lines for Build.Output "gobench" (with the failed benchmarks as
// the result's Reason), metric lines (MetricPrefix) otherwise.
func CommandResult(b Build, out []byte) TrialResult {
	if b.Output == OutputGoBench {
		ms, fails, err := SuiteMetrics(out)
		if err != nil {
			return TrialResult{Status: StatusFailed, Reason: err.Error()}
		}
		if b.Bench != nil {
			ms = QualifySuiteMetrics(ms, out)
		}
		return TrialResult{Status: StatusOK, Metrics: ms, Reason: fails}
	}
	ms, err := commandMetrics(b, out)
	if err != nil {
		return TrialResult{Status: StatusFailed, Reason: err.Error()}
	}
	return TrialResult{Status: StatusOK, Metrics: ms}
}

// SuiteMetrics reads a suite trial's output: its metrics
// (GoBenchMetrics) and its failed benchmarks (BenchFailures). A trial
// whose benchmarks all failed, and said so, has no metrics and no error:
// it counts, and the report names them.
func SuiteMetrics(out []byte) (ms []Metric, fails string, err error) {
	fails = BenchFailures(out)
	ms, err = GoBenchMetrics(out)
	switch {
	case errors.Is(err, errNoBenchResults) && fails != "":
		return []Metric{}, fails, nil
	case errors.Is(err, errNoBenchResults) && bytes.Contains(out, []byte(benchNoneLeft)):
		return []Metric{}, "", nil
	}
	return ms, fails, err
}

// QualifySuiteMetrics names a suite trial's metrics with their package
// (the last element of its import path, from the trial's pkg: line), as
// benchstat's tables do: "decimal.AppendFloatToDecimal/Integers-2". A
// trial runs one benchmark of one package; a name already qualified
// (parse.GoBench qualifies names in two packages of one output) is left.
func QualifySuiteMetrics(ms []Metric, out []byte) []Metric {
	pkg := ""
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "pkg: "); ok {
			if pkg != "" && pkg != strings.TrimSpace(v) {
				return ms // two packages: parse.GoBench qualified the names it had to
			}
			pkg = strings.TrimSpace(v)
		}
	}
	if pkg == "" {
		return ms
	}
	prefix := path.Base(pkg) + "."
	for i, m := range ms {
		if !strings.HasPrefix(m.Name, prefix) {
			ms[i].Name = prefix + m.Name
		}
	}
	return ms
}

func commandMetrics(b Build, out []byte) ([]Metric, error) {
	if b.Output == OutputGoBench {
		return GoBenchMetrics(out)
	}
	var ms []Metric
	for i, line := range strings.Split(string(out), "\n") {
		if !IsMetricLine(line) {
			continue
		}
		m, err := ParseMetricLine(line)
		if err != nil {
			return nil, fmt.Errorf("stdout line %d: %v", i+1, err)
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("the command printed no metric lines (%s name=value ...) and no go test -bench results", MetricPrefix)
	}
	return ms, nil
}
