package lab

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

func benchSpecForTest() *BenchSpec {
	return &BenchSpec{Benchtime: "10x", Seed: 7, Packages: []BenchPackage{
		{Path: "example.com/m/a", Dir: "a/pkg0", Binary: "pkg0.test", Benchmarks: []string{"Sort", "Search", "Same"}},
		{Path: "example.com/m/b", Dir: "a/pkg1", Binary: "pkg1.test", Benchmarks: []string{"Sort", "Hash"}},
	}}
}

// ranBenchmarks is the order in which a trial command runs its
// benchmarks, as PKGDIR/NAME.
func ranBenchmarks(t *testing.T, cmd []string) []string {
	if len(cmd) != 3 || cmd[0] != "sh" || cmd[1] != "-c" {
		if t == nil {
			return nil
		}
		t.Fatalf("command %q: want sh -c SCRIPT", cmd)
	}
	re := regexp.MustCompile(`cd (\S+) && exec \./\S+ -test\.run='\^\$' -test\.bench='\^Benchmark(\w+)\$'`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(cmd[2], -1) {
		out = append(out, m[1]+"/"+m[2])
	}
	return out
}

func TestBenchTrialCommand(t *testing.T) {
	s := benchSpecForTest()
	all := []string{"a/pkg0/Sort", "a/pkg0/Search", "a/pkg0/Same", "a/pkg1/Sort", "a/pkg1/Hash"}
	if got := ranBenchmarks(t, s.ListingCommand()); !slices.Equal(got, all) {
		t.Fatalf("listing runs %v, want %v", got, all)
	}
	// A round runs one benchmark; each pass of K rounds runs every
	// wanted one once, in an order of the pass's own.
	for _, tc := range []struct {
		name   string
		wanted map[string]bool
		want   []string // what a pass runs, sorted
	}{
		{"all", nil, all},
		{"qualified names", map[string]bool{"m/a.Sort": true, "b.Sort": true, "b.Hash": true}, []string{"a/pkg1/Hash", "a/pkg1/Sort"}},
		{"plain name of a package", map[string]bool{"Search": true}, []string{"a/pkg0/Search"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			for round := range 5 {
				got := ranBenchmarks(t, s.TrialCommand(10+round, tc.wanted))
				if len(got) != 1 {
					t.Fatalf("round %d runs %v, want one benchmark", round, got)
				}
				seen[got[0]] = true
			}
			if got := slices.Sorted(maps.Keys(seen)); !slices.Equal(got, slices.Sorted(slices.Values(tc.want))) {
				t.Errorf("a pass runs %v, want %v", got, tc.want)
			}
		})
	}
	// The order is the pass's: the same round gives the same benchmark,
	// and passes differ.
	if a, b := ranBenchmarks(t, s.TrialCommand(3, nil)), ranBenchmarks(t, s.TrialCommand(3, nil)); !slices.Equal(a, b) {
		t.Errorf("round 3 runs %v then %v", a, b)
	}
	pass := func(p int) []string {
		var out []string
		for r := range 5 {
			out = append(out, ranBenchmarks(t, s.TrialCommand(5*p+r, nil))...)
		}
		return out
	}
	differ := 0
	for p := 1; p <= 20; p++ {
		if !slices.Equal(pass(p), pass(0)) {
			differ++
		}
	}
	if differ < 15 {
		t.Errorf("only %d of 20 passes have another order than pass 0", differ)
	}
	if got := ranBenchmarks(t, s.WarmupCommand()); len(got) != 5 || !strings.Contains(s.WarmupCommand()[2], "-test.benchtime=1x") {
		t.Errorf("warm-up runs %v", got)
	}
}

// TestBenchScriptGoesOn runs a trial script through sh: a benchmark that
// fails says so on stderr and the next still runs.
func TestBenchScriptGoesOn(t *testing.T) {
	dir := t.TempDir()
	s := &BenchSpec{Benchtime: "1x", Packages: []BenchPackage{
		{Path: "p", Dir: ".", Binary: "missing.test", Benchmarks: []string{"Broken"}},
		{Path: "q", Dir: ".", Binary: "ok.test", Benchmarks: []string{"Fine"}},
	}}
	script := "printf '#!/bin/sh\\necho BenchmarkFine 1 5 ns/op\\n' > ok.test && chmod +x ok.test\n" + s.ListingCommand()[2]
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v (%s)", err, stderr.String())
	}
	if got := BenchFailures(out); got != "benchmark p.Broken failed, exit status 127" {
		t.Errorf("failures %q, want p.Broken named (stderr %q)", BenchFailures(out), stderr.String())
	}
	ms, err := GoBenchMetrics(out)
	if err != nil || len(ms) != 1 || ms[0].Name != "Fine" || ms[0].Value != 5 {
		t.Errorf("metrics %+v, %v: want Fine 5 ns/op", ms, err)
	}
}

func TestBenchOfMetric(t *testing.T) {
	for in, want := range map[string]string{"Sort": "Sort", "Sort:B/op": "Sort", "Sort/n=10:allocs/op": "Sort", "b.Sort": "b.Sort",
		"Sort-2": "Sort", "Sort-2:B/op": "Sort", "Sort/n=10-8": "Sort", "go-cmp.Sort-4": "go-cmp.Sort", "go-cmp.Sort": "go-cmp.Sort"} {
		if got := BenchOfMetric(in); got != want {
			t.Errorf("BenchOfMetric(%q) = %q, want %q", in, got, want)
		}
	}
}

// benchFake runs a suite's trial commands instantly: Clear is 20% slower
// in B with little noise (decided within a few rounds), Noisy is the same
// in both arms with 10% noise (it needs many more), and it counts the
// trials that ran each benchmark.
type benchFake struct {
	id  string
	mu  sync.Mutex
	ran map[string]int
}

func (d *benchFake) Info() DeviceInfo { return DeviceInfo{ID: d.id, Backend: "test"} }
func (d *benchFake) Setup(ctx context.Context, exp *Experiment) ([]Event, error) {
	return nil, nil
}
func (d *benchFake) Close() error { return nil }
func (d *benchFake) RunTrial(ctx context.Context, req TrialRequest) TrialResult {
	rng := rand.New(rand.NewPCG(uint64(req.Round), uint64(len(req.Arm))))
	var ms []Metric
	for _, b := range ranBenchmarks(nil, req.Build.Command) {
		name := path.Base(b)
		d.mu.Lock()
		if !req.Warmup {
			d.ran[name]++
		}
		d.mu.Unlock()
		v := 100 * (1 + 0.1*rng.NormFloat64())
		if name == "Clear" {
			v = 100 * (1 + 0.001*rng.NormFloat64())
			if req.Arm == ArmTreatment {
				v *= 1.2
			}
		}
		ms = append(ms, Metric{Name: name + "-2", Value: v, Unit: "ns/op", Better: "lower"})
	}
	return TrialResult{Status: StatusOK, Metrics: ms}
}

// TestSuiteDropsDecided runs a suite with "stop": "auto" alone and as a
// pool: once Clear is decided its benchmark leaves the rounds, Noisy goes
// on to the cap.
func TestSuiteDropsDecided(t *testing.T) {
	spec := &BenchSpec{Benchtime: "1x", Packages: []BenchPackage{{Path: "p", Dir: "d", Binary: "p.test", Benchmarks: []string{"Clear", "Noisy"}}}}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d devices", n), func(t *testing.T) {
			exp := testExp(OrderRandom, 80, 1) // 40 rounds of each benchmark
			exp.Stop, exp.MaxTrials, exp.Suite = StopAuto, 80, &SuiteInfo{}
			b := Build{Command: spec.ListingCommand(), Bench: spec, Output: OutputGoBench}
			exp.Builds = map[string]Build{ArmControl: b, ArmTreatment: b}
			var devs []Device
			var fakes []*benchFake
			for i := range n {
				f := &benchFake{id: fmt.Sprintf("w%d", i), ran: map[string]int{}}
				fakes, devs = append(fakes, f), append(devs, f)
			}
			var evs []Event
			if n == 1 {
				evs = collect(NewRunner(devs[0], exp).Run(context.Background()))
			} else {
				evs = collect(NewPool(devs, exp).Run(context.Background()))
			}
			ran := map[string]int{}
			for _, f := range fakes {
				for k, v := range f.ran {
					ran[k] += v
				}
			}
			end := evs[len(evs)-1].End
			// Alone, Noisy gets its cap exactly; a pool stops handing its
			// rounds out a few rounds early (suiteStop.margin), never late.
			lo := 80
			if n > 1 {
				lo = 2 * (40 - (2*n - 1) - 1)
			}
			if ran["Noisy"] > 80 || ran["Noisy"] < lo || ran["Clear"] >= 40 || ran["Clear"] < 8 {
				t.Errorf("trials ran Clear %d times and Noisy %d: want Clear dropped once decided, Noisy to its cap (40 rounds, %d–80 trials); end %+v", ran["Clear"], ran["Noisy"], lo, end)
			}
		})
	}
}

// TestTrialBuildWarmup: a suite's warm-up runs every benchmark once
// (1x), its counted trials at the spec's benchtime, only what is wanted.
func TestTrialBuildWarmup(t *testing.T) {
	s := benchSpecForTest()
	b := Build{Command: s.ListingCommand(), Bench: s}
	warm := trialBuild(b, 0, true, map[string]bool{"b.Hash": true})
	counted := trialBuild(b, 1, false, map[string]bool{"b.Hash": true})
	if n := strings.Count(warm.Command[2], "-test.benchtime=1x"); n != 5 {
		t.Errorf("warm-up: %d benchmarks at 1x, want all 5:\n%s", n, warm.Command[2])
	}
	if strings.Contains(counted.Command[2], "1x") || strings.Count(counted.Command[2], "-test.benchtime=10x") != 1 {
		t.Errorf("counted trial: want Hash alone at 10x:\n%s", counted.Command[2])
	}
	if s.Benchtime != "10x" {
		t.Errorf("the spec changed: %+v", s)
	}
	if plain := trialBuild(Build{Command: []string{"true"}}, 0, true, nil); plain.Command[0] != "true" {
		t.Errorf("a build without Bench: %v", plain.Command)
	}
}

func TestFromPackage(t *testing.T) {
	for _, tt := range []struct{ dir, path, want string }{
		{"a/pkg0", "perflab", "../../perflab"},
		{"pkg", "bin/perflab", "../bin/perflab"},
		{".", "perflab", "./perflab"},
		{"a/pkg0", "/usr/bin/perflab", "/usr/bin/perflab"},
	} {
		if got := fromPackage(tt.dir, tt.path); got != tt.want {
			t.Errorf("fromPackage(%q, %q) = %q, want %q", tt.dir, tt.path, got, tt.want)
		}
	}
}
