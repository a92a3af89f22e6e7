package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/perflab/perflab/internal/calibration"
)

// The simulations model the simulated phone with every control on
// (sim:pixel, app feed, examples/sim-controls-on.json): each trial's
// startup time is lognormal with a log-scale standard deviation of 0.0078,
// as measured there over 3 × 200 rounds (the per-round log ratio then has
// a standard deviation of 0.011, also as measured). Running the simulated
// phone itself for thousands of experiments would take minutes; this model
// takes milliseconds.
const simTrialLogSD = 0.0078

// simRound returns one round's log ratio log(B/A) with B slower by
// effectPct.
func simRound(rng *rand.Rand, effectPct float64) float64 {
	a := rng.NormFloat64() * simTrialLogSD
	b := math.Log1p(effectPct/100) + rng.NormFloat64()*simTrialLogSD
	return b - a
}

// runSequential simulates one experiment with automatic stopping: a look
// after every round, stop at a decision or at maxRounds. d is the shared
// group-sequential design (nil: the t-mixture).
func runSequential(rng *rand.Rand, effectPct float64, maxRounds int, opt SequentialOptions, d *gsDesign) (*SequentialTest, int) {
	st := newSequentialTest(opt, d)
	for k := 1; k <= maxRounds; k++ {
		st.Add(simRound(rng, effectPct))
		if st.Decided() {
			return st, k
		}
	}
	return st, maxRounds
}

// TestSequentialAAFalsePositives: with a look after every round up to 100
// rounds, the A/A false-positive rate of the rule of stop auto (the
// group-sequential design calibrated to max_trials) lies inside the 95%
// binomial band around α over 10,000 experiments (2,000 left it at the
// mercy of one seed: the Sheppard-corrected walker gave 73, 2.9 standard
// errors low, where 20,000 more experiments gave 5.1%), on both sides: it spends
// the error it is allowed. The uncapped t-mixture stays below the band's
// upper end (it is conservative under a cap); naive peeking at the paired
// t-test's p is shown for contrast.
//
// The 10,000 run with bench/calibration.sh. The test runs 2,000 (seeded)
// against the 99.9% band, 69–133: a calibrated rule leaves it on one seed
// in a thousand, a rule that spends α/2 (about 50) or 2α (about 200) does
// not stay in it. It checks the repeated p (a few recursions each, a
// fifth of a second under the race detector) on 5 experiments, the full
// study on 50.
func TestSequentialAAFalsePositives(t *testing.T) {
	const maxRounds, alpha = 100, 0.05
	experiments, band := calibration.Size(2000, 10000), calibration.Size(0.999, 0.95)
	pChecked := calibration.Size(5, 50)
	rng := rand.New(rand.NewPCG(2026, 11))
	opt := SequentialOptions{Alpha: alpha, MaxRounds: maxRounds}
	design := sequentialDesign(opt)
	fp, mixFP, naive := 0, 0, 0
	for i := range experiments {
		st, _ := runSequential(rng, 0, maxRounds, opt, design)
		r := st.result(i < pChecked) // the repeated p costs a few recursions: check it on some
		if r.Decision == VerdictRegression || r.Decision == VerdictImprovement {
			fp++
		}
		if i < pChecked && (!r.P.Defined() || r.P < 0 || r.P > 1) {
			t.Fatalf("p %v out of [0, 1]", float64(r.P))
		}
	}
	for range experiments {
		st, _ := runSequential(rng, 0, maxRounds, SequentialOptions{Alpha: alpha}, nil)
		if r := st.Result(); r.Decision == VerdictRegression || r.Decision == VerdictImprovement {
			mixFP++
		}
	}
	// Naive: the fixed-n paired t-test looked at after every round.
	crit := make([]float64, maxRounds+1)
	for n := 2; n <= maxRounds; n++ {
		crit[n] = studentTQuantile(1-alpha/2, float64(n-1))
	}
	for range experiments {
		var sum, sum2 float64
		for k := 1; k <= maxRounds; k++ {
			x := simRound(rng, 0)
			sum += x
			sum2 += x * x
			if k < 5 {
				continue
			}
			n := float64(k)
			m := sum / n
			sd := math.Sqrt((sum2 - n*m*m) / (n - 1))
			if math.Abs(m/(sd/math.Sqrt(n))) > crit[k] {
				naive++
				break
			}
		}
	}
	lo, hi := BinomialRange(experiments, alpha, band)
	t.Logf("A/A, look after every round up to %d: stop-auto rule (O'Brien–Fleming-type spending over %d rounds) false positives %d/%d = %.2f%% (%g%% band around α: %d–%d); uncapped t-mixture %.2f%%; naive peeking at the paired t-test %.1f%%",
		maxRounds, maxRounds, fp, experiments, 100*float64(fp)/float64(experiments), 100*band, lo, hi,
		100*float64(mixFP)/float64(experiments), 100*float64(naive)/float64(experiments))
	if fp < lo || fp > hi {
		t.Errorf("false positives %d outside the band %d–%d", fp, lo, hi)
	}
	if mixFP > hi {
		t.Errorf("t-mixture false positives %d above the band's upper end %d", mixFP, hi)
	}
	if naive <= hi {
		t.Errorf("naive peeking gave %d false positives: the simulation should show its inflation", naive)
	}
}

// TestSequentialDetectsOnePercent: a +1% change with the simulated
// phone's noise is detected by the rule of stop auto (max 40 rounds) in at
// least 80% of 2,000 experiments, using fewer rounds on average than the
// fixed-n paired t-test of equal power.
func TestSequentialDetectsOnePercent(t *testing.T) {
	const experiments, maxRounds, effect, alpha = 2000, 40, 1.0, 0.05
	rng := rand.New(rand.NewPCG(2026, 12))
	opt := SequentialOptions{Alpha: alpha, MaxRounds: maxRounds}
	design := sequentialDesign(opt)
	detected, used, wrong := 0, 0, 0
	var rounds []float64
	for range experiments {
		st, k := runSequential(rng, effect, maxRounds, opt, design)
		used += k
		rounds = append(rounds, float64(k))
		switch st.result(false).Decision {
		case VerdictRegression:
			detected++
		case VerdictImprovement:
			wrong++
		}
	}
	power := float64(detected) / experiments
	mean := float64(used) / experiments
	p90 := quantileSelect(rounds, 0.9)
	// The fixed-n design of equal power: the smallest n at which the
	// paired t-test (the most powerful test for these normal log ratios)
	// detects the change as often, estimated on the same model.
	fixedN := 0
	for n := 2; n <= 4*maxRounds && fixedN == 0; n++ {
		crit := studentTQuantile(1-alpha/2, float64(n-1))
		hits := 0
		for range experiments {
			var sum, sum2 float64
			for range n {
				x := simRound(rng, effect)
				sum += x
				sum2 += x * x
			}
			fn := float64(n)
			m := sum / fn
			sd := math.Sqrt((sum2 - fn*m*m) / (fn - 1))
			if m/(sd/math.Sqrt(fn)) > crit {
				hits++
			}
		}
		if float64(hits)/experiments >= power {
			fixedN = n
		}
	}
	t.Logf("+%g%% change, auto stop (max %d rounds): detected %.1f%% (wrong direction %d), rounds used mean %.1f, p90 %.0f; fixed-n paired t-test of equal power needs %d rounds",
		effect, maxRounds, power*100, wrong, mean, p90, fixedN)
	if power < 0.8 {
		t.Errorf("detection %.1f%% < 80%%", power*100)
	}
	if fixedN == 0 || mean >= float64(fixedN) {
		t.Errorf("auto stopping used %.1f rounds on average, the fixed design of equal power %d", mean, fixedN)
	}
}

func TestSequentialDecisions(t *testing.T) {
	for _, maxRounds := range []int{0, 400} {
		t.Run(fmt.Sprintf("max_rounds=%d", maxRounds), func(t *testing.T) { testSequentialDecisions(t, maxRounds) })
	}
}

func testSequentialDecisions(t *testing.T, maxRounds int) {
	// Every check is at α = 0.05: the design (a second under the race
	// detector for 400 rounds) is built once; SequentialPaired below
	// builds its own.
	design := sequentialDesign(SequentialOptions{Alpha: 0.05, MaxRounds: maxRounds})
	check := func(name string, d []float64, opt SequentialOptions, want string) {
		t.Helper()
		opt.MaxRounds = maxRounds
		if opt.Alpha != 0.05 {
			t.Fatalf("%s: α %g, the shared design is for 0.05", name, opt.Alpha)
		}
		r := sequentialPairedOn(d, opt, design)
		if r.Decision != want {
			t.Errorf("%s: decision %s (%s), want %s", name, r.Decision, r.Reason, want)
		}
		// The test and the interval agree.
		if r.P.Defined() && r.CILowPct.Defined() {
			excl := r.CILowPct > 0 || r.CIHighPct < 0
			if excl != (float64(r.P) <= opt.Alpha) {
				t.Errorf("%s: p %v but interval [%v, %v]", name, float64(r.P), float64(r.CILowPct), float64(r.CIHighPct))
			}
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	slower := make([]float64, 60)
	same := make([]float64, 400)
	for i := range slower {
		slower[i] = simRound(rng, 3)
	}
	for i := range same {
		same[i] = simRound(rng, 0)
	}
	alpha := SequentialOptions{Alpha: 0.05}
	check("3% slower", slower, alpha, VerdictRegression)
	check("3% slower, higher is better", slower, SequentialOptions{Alpha: 0.05, Better: BetterHigher}, VerdictImprovement)
	check("3% slower, threshold 10%: within ±10%", slower, SequentialOptions{Alpha: 0.05, ThresholdPct: 10}, VerdictNoChange)
	r := SequentialPaired(slower, SequentialOptions{Alpha: 0.05, MaxRounds: maxRounds})
	between := (float64(r.DeltaPct) + float64(r.CIHighPct)) / 2
	check("significant, below a threshold inside the interval", slower, SequentialOptions{Alpha: 0.05, ThresholdPct: between}, DecisionContinue)
	check("A/A, threshold 0", same, alpha, DecisionContinue)
	check("A/A, threshold 1%", same, SequentialOptions{Alpha: 0.05, ThresholdPct: 1}, VerdictNoChange)
	check("one round", slower[:1], alpha, DecisionContinue)
	check("constant ratio", []float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, alpha, VerdictRegression)
	alpha.MaxRounds = maxRounds
	if r := SequentialPaired(nil, alpha); r.N != 0 || r.Decided() || r.DeltaPct.Defined() {
		t.Errorf("no rounds: %+v", r)
	}
	// The interval only shrinks as rounds come in.
	st := newSequentialTest(alpha, design)
	prevW := math.Inf(1)
	for _, x := range same[:100] {
		st.Add(x)
		r := st.result(false)
		if r.CILowPct.Defined() {
			w := float64(r.CIHighPct - r.CILowPct)
			if w > prevW+1e-12 {
				t.Fatalf("interval widened at n=%d: %v > %v", r.N, w, prevW)
			}
			prevW = w
		}
	}
}

// TestSequentialMethodByCap: stop auto's cap picks the method, and the
// result says which guarantee holds: the calibrated design for caps of
// 2 … MaxCalibratedRounds, the uncapped t-mixture otherwise.
func TestSequentialMethodByCap(t *testing.T) {
	d := []float64{0.01, -0.02, 0.015, 0.003}
	for _, c := range []struct {
		maxRounds int
		capped    bool
	}{{0, false}, {1, false}, {2, true}, {40, true}, {MaxCalibratedRounds, true}, {MaxCalibratedRounds + 1, false}} {
		if c.maxRounds == MaxCalibratedRounds+1 {
			// Only the choice is checked here: no design is computed.
			if sequentialDesign(SequentialOptions{Alpha: 0.05, MaxRounds: c.maxRounds}) != nil {
				t.Errorf("max rounds %d: a design above the cap", c.maxRounds)
			}
			continue
		}
		r := SequentialPaired(d, SequentialOptions{Alpha: 0.05, MaxRounds: c.maxRounds})
		want := GuaranteeAnytime
		if c.capped {
			want = fmt.Sprintf(GuaranteeCapped, c.maxRounds)
		}
		if r.Guarantee != want || (r.Method == SequentialMixture) == c.capped {
			t.Errorf("max rounds %d: method %q, guarantee %q", c.maxRounds, r.Method, r.Guarantee)
		}
	}
}

// TestSequentialDesignsReuse: Compare with a kept SequentialDesigns gives
// the very report it gives without one, on the first call and on later
// ones, at the default and another α, and builds one design per (α, cap)
// (and per α/k, for the intervals of k metrics corrected together),
// handed out again on later calls.
func TestSequentialDesignsReuse(t *testing.T) {
	in := benchPairedInputs(3, 25)
	designs := new(SequentialDesigns)
	for _, alpha := range []float64{0.05, 0.01, 0.05} {
		opt := DefaultOptions()
		opt.Alpha, opt.Resamples = alpha, 200
		opt.Sequential, opt.SequentialMaxRounds = true, 60
		r := Compare(in, opt)
		if r.Metrics[0].Sequential == nil || !r.Metrics[0].Sequential.P.Defined() {
			t.Fatalf("α %g: no group-sequential analysis: %+v", alpha, r.Metrics[0].Sequential)
		}
		want, _ := json.Marshal(r) // shortest round-trip digits: equal text, equal bits
		kept := opt
		kept.Designs = designs
		for call := range 2 {
			if got, _ := json.Marshal(Compare(in, kept)); string(got) != string(want) {
				t.Errorf("α %g, call %d: the report with kept designs differs:\n got %s\nwant %s", alpha, call, got, want)
			}
		}
	}
	// One per α and one per α/3, the level of three metrics corrected
	// together (familyLevels).
	if len(designs.m) != 4 {
		t.Errorf("%d designs kept, want 4 (one per α and α/3)", len(designs.m))
	}
	so := SequentialOptions{Alpha: 0.05, MaxRounds: 60}
	if a, b := designs.design(so), designs.design(so); a != b || a == nil {
		t.Errorf("the design was built again (%p, %p)", a, b)
	}
	if d := designs.design(SequentialOptions{Alpha: 0.05}); d != nil {
		t.Errorf("no cap: got a design, want the t-mixture (nil)")
	}
}
