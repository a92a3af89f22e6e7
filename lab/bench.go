package lab

import (
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/perflab/perflab/analysis/parse"
	"github.com/perflab/perflab/lab/shquote"
)

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
	// Packages are the test binaries, relative to the build's folder
	// (Build.Dir; Build.Files on a remote worker).
	Packages []BenchPackage `json:"packages"`
	// Wrapper, when set, runs a package's benchmarks itself (the
	// cachegrind mode): the trial runs Wrapper --pkg PKG --benchtime T
	// ./BINARY NAME... in the package's folder, NAMEs without
	// "Benchmark".
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

// TrialCommand is the command of one trial: every benchmark of wanted
// (all when wanted is nil) in an order drawn from seed and round (the same
// for both arms of a round, so that a pair shares its benchmarks'
// positions), each in its own process; a benchmark that fails says so on
// stderr and the others go on.
func (s *BenchSpec) TrialCommand(seed int64, round int, wanted map[string]bool) []string {
	refs := s.refs()
	if wanted != nil {
		refs = slices.DeleteFunc(refs, func(r benchRef) bool {
			// A name in two packages is qualified by the package (analysis/parse).
			return !wanted[r.name] && !wanted[path.Base(s.Packages[r.pkg].Path)+"."+r.name]
		})
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(round)+0x9e3779b97f4a7c15))
	rng.Shuffle(len(refs), func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
	return []string{"sh", "-c", s.script(refs)}
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
		return nil, fmt.Errorf("benchmark output: no result lines (no benchmark matched, or it failed: see the trial's stderr)")
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
	ms, err := commandMetrics(b, out)
	if err != nil {
		return TrialResult{Status: StatusFailed, Reason: err.Error()}
	}
	return TrialResult{Status: StatusOK, Metrics: ms, Reason: BenchFailures(out)}
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
