package study

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/perflab/perflab/analysis"
	"github.com/perflab/perflab/lab"
)

// poolAA runs n A/A experiments of the unequal pool (or of one phone when
// one is set) as validate does and returns their data and options.
func poolAA(t *testing.T, n int, one bool) ([]*runData, analysis.Options) {
	t.Helper()
	exp := feedExperiment(20, controlsOn())
	devs := simDevices("pixel")
	if !one {
		exp.Device, exp.Devices = "", []string{"sim:pixel", "sim:pixel#2", "sim:pixel#3", "sim:pixel#4"}
		devs = unequalPool()
	}
	opt := analysisOptions(exp, "")
	aa := clone(exp)
	twin := aa.Builds[lab.ArmControl]
	twin.Name = "twin"
	aa.Builds[lab.ArmTreatment] = twin
	var specs []runSpec
	for i := 0; i < n; i++ {
		e := clone(aa)
		e.Seed = seedFor(exp.Seed, "aa", i)
		specs = append(specs, runSpec{phase: "aa", index: i, seed: e.Seed, exp: e})
	}
	data, err := collect(context.Background(), "validate", devs, specs, exp, "", opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	return data, opt
}

// aaCounts counts, over A/A runs, the primary (signed-rank) test's p below
// alpha, the interval of the change excluding 0, and the verdicts of a
// change (both: what validate counts as a false positive).
type aaCounts struct {
	Runs, TestSig, IntervalExcl, Verdict int
}

func countAA(t *testing.T, data []*runData, opt analysis.Options) aaCounts {
	t.Helper()
	var c aaCounts
	for _, d := range data {
		if d == nil || d.err != nil {
			continue
		}
		in := d.input("startup_ms", metricInfo{unit: "ms", better: analysis.BetterLower})
		m := analysis.Compare([]analysis.MetricInput{in}, opt).Metrics[0]
		if m.Paired == nil {
			t.Fatal("no paired analysis of an alternating pool session")
		}
		c.Runs++
		if float64(m.Paired.P) < opt.Alpha {
			c.TestSig++
		}
		if float64(m.Paired.CILowPct) > 0 || float64(m.Paired.CIHighPct) < 0 {
			c.IntervalExcl++
		}
		if m.Verdict == analysis.VerdictRegression || m.Verdict == analysis.VerdictImprovement {
			c.Verdict++
		}
	}
	return c
}

// TestPoolAARateByHand measures the A/A rates over PERFLAB_POOL_AA
// experiments (run by hand, not in CI), of the pool or, with
// PERFLAB_POOL_ONE set, of one phone:
//
//	PERFLAB_POOL_AA=2000 go test -run TestPoolAARateByHand -v ./sessions/study/
//
// Measured (2026-11-23, 20 pairs, about 5 per device): pool test p<α
// 88/2000, interval excludes 0 113, verdict 67; one phone 78, 101, 52,
// with the bootstrap interval of the median. With the signed-rank
// interval (which inverts the test) all three agree: pool 88, 88, 88; one
// phone 78, 78, 78.
// The exact size of the two-sided signed-rank test at n = 20, α = 0.05
// is 0.0484.
func TestPoolAARateByHand(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PERFLAB_POOL_AA"))
	if n <= 0 {
		t.Skip("set PERFLAB_POOL_AA to the number of A/A experiments")
	}
	data, opt := poolAA(t, n, os.Getenv("PERFLAB_POOL_ONE") != "")
	c := countAA(t, data, opt)
	t.Logf("%d runs: signed-rank p<α %d, interval excludes 0 %d, verdict (both) %d", c.Runs, c.TestSig, c.IntervalExcl, c.Verdict)
}
