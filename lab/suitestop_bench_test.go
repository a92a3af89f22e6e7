package lab

import (
	"fmt"
	"math/rand/v2"
	"path"
	"syscall"
	"testing"
	"time"
)

// stopSuite is a seeded synthetic suite for the stop rule: benches
// benchmarks in 4 packages, each reporting ns/op, B/op and allocs/op as
// a suite's trial does. Every tenth benchmark is 10% slower in B, every
// tenth (offset 5) 8% faster, the rest the same with 1–5% noise; B/op is
// the same constant in both arms for two thirds of them (untested, as
// for most real benchmarks) and noisy for the rest; allocs/op constant,
// one more in B for every twentieth.
type stopSuite struct {
	exp  *Experiment
	spec *BenchSpec
}

func newStopSuite(benches, rounds int, threshold float64) stopSuite {
	spec := &BenchSpec{Benchtime: "100ms", Seed: 3}
	for p := range 4 {
		bp := BenchPackage{Path: fmt.Sprintf("example.com/m/p%d", p), Dir: fmt.Sprintf("p%d", p), Binary: "p.test"}
		for i := p; i < benches; i += 4 {
			bp.Benchmarks = append(bp.Benchmarks, fmt.Sprintf("B%03d", i))
		}
		spec.Packages = append(spec.Packages, bp)
	}
	exp := testExp(OrderRandom, rounds*benches, 1)
	exp.Stop, exp.MaxTrials, exp.Suite, exp.Threshold = StopAuto, rounds*benches, &SuiteInfo{}, threshold
	b := Build{Command: spec.ListingCommand(), Bench: spec, Output: OutputGoBench}
	exp.Builds = map[string]Build{ArmControl: b, ArmTreatment: b}
	return stopSuite{exp: exp, spec: spec}
}

// metrics is what benchmark i reports in arm (0 A, 1 B) of a round.
func (s stopSuite) metrics(i, round, arm int) []Metric {
	rng := rand.New(rand.NewPCG(uint64(round), uint64(2*i+arm)))
	name := fmt.Sprintf("B%03d-2", i)
	ns := 1000 * float64(1+i%7) * (1 + 0.01*float64(1+i%5)*rng.NormFloat64())
	bytes, allocs := 64.0, float64(i%4)
	if arm == 1 {
		switch i % 10 {
		case 0:
			ns *= 1.10
		case 5:
			ns *= 0.92
		}
		if i%20 == 0 {
			allocs++
		}
	}
	if i%3 == 2 {
		bytes = 4096 * (1 + 0.02*rng.NormFloat64())
	}
	return []Metric{{Name: name, Value: ns, Unit: "ns/op", Better: "lower"},
		{Name: name + ":B/op", Value: bytes, Unit: "B/op", Better: "lower"},
		{Name: name + ":allocs/op", Value: allocs, Unit: "allocs/op", Better: "lower"}}
}

// run feeds the suite to the stop rule a (newAutoStop of s.exp) round
// by round as a lone runner does (the benchmarks wanted, the round's benchmark by
// BenchSpec.TrialCommand, its A and B trials, the stop check) until it
// stops or reaches the cap. It returns the time spent in the stop rule
// per round, wall and CPU (every thread of the process: the analysis
// runs metrics in parallel), and, when look is set, calls it after every
// round.
func (s stopSuite) run(a *autoStop, look func(round int, a *autoStop)) (wall, cpu []time.Duration) {
	for round := 0; round < s.exp.TrialCap(); round++ {
		t0, c0 := time.Now(), cpuTime()
		wanted := a.wantedBenches()
		d, c := time.Since(t0), cpuTime()-c0
		ran := ranBenchmarks(nil, s.spec.TrialCommand(round, wanted))
		if len(ran) != 1 {
			break // none left
		}
		var i int
		fmt.Sscanf(path.Base(ran[0]), "B%d", &i)
		trials := []*Trial{{Arm: ArmControl, Round: round, Status: StatusOK, Metrics: s.metrics(i, round, 0)},
			{Arm: ArmTreatment, Round: round, Status: StatusOK, Metrics: s.metrics(i, round, 1)}}
		t0, c0 = time.Now(), cpuTime()
		for _, t := range trials {
			a.add(t)
		}
		stop := a.decided()
		wall, cpu = append(wall, d+time.Since(t0)), append(cpu, c+cpuTime()-c0)
		if look != nil {
			look(round, a)
		}
		if stop {
			break
		}
	}
	return wall, cpu
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkSuiteStop measures the suite stop rule's work over a whole
// run of a big suite: ns/round is its mean wall time per round (compare
// perflab's own 3.8 ms a round, docs/suite.md), cpu-ns/round its CPU
// time (steadier on a busy host), ms/run the run's total wall time,
// rounds the rounds the run took.
//
//	go test ./lab/ -run '^$' -bench 'SuiteStop$' -benchtime 1x
func BenchmarkSuiteStop(b *testing.B) {
	benchSuiteStop(b, false, []stopSize{{100, 10, 0}, {100, 50, 0}, {100, 50, 5}, {200, 50, 5}})
}

// BenchmarkSuiteStopFromScratch is BenchmarkSuiteStop with the rule
// analysing every metric after every round (analysis.Compare), as it did
// before its analysis.Comparer: some 25 times slower at 100 benchmarks
// of 10 rounds, and growing with the rounds.
//
//	go test ./lab/ -run '^$' -bench SuiteStopFromScratch -benchtime 1x
func BenchmarkSuiteStopFromScratch(b *testing.B) {
	benchSuiteStop(b, true, []stopSize{{100, 10, 0}})
}

// stopSize is a suite of benches benchmarks, rounds rounds of each at
// most, with the threshold.
type stopSize struct {
	benches, rounds int
	threshold       float64
}

func benchSuiteStop(b *testing.B, scratch bool, sizes []stopSize) {
	for _, c := range sizes {
		b.Run(fmt.Sprintf("%dx%d-threshold%g", c.benches, c.rounds, c.threshold), func(b *testing.B) {
			s := newStopSuite(c.benches, c.rounds, c.threshold)
			var total, cpu time.Duration
			var rounds, last int
			for range b.N {
				a := newAutoStop(s.exp, 1)
				if scratch {
					a.suite.compare = fromScratch(a.suite.opt)
				}
				wall, c := s.run(a, nil)
				for i := range wall {
					total, cpu = total+wall[i], cpu+c[i]
				}
				rounds += len(wall)
				last = len(wall)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(rounds), "ns/round")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(rounds), "cpu-ns/round")
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/run")
			b.ReportMetric(float64(last), "rounds")
		})
	}
}
