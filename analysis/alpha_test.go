package analysis

import (
	"math"
	"testing"
)

func TestJudgeAlpha(t *testing.T) {
	check := func(k, n int, want string) {
		t.Helper()
		p, _ := BinomialCI(k, n, 0.95)
		if got := p.JudgeAlpha(0.05, 0.95); got != want {
			t.Errorf("%d of %d (CI %.3f–%.3f): %q, want %q", k, n, float64(p.CILow), float64(p.CIHigh), got, want)
		}
	}
	check(0, 5, AlphaTooFew)    // 0–52%
	check(0, 20, AlphaTooFew)   // 0–16.8%: 20 can never flag a conservative test
	check(1, 20, AlphaTooFew)   // and detect a 10% rate 13% of the time
	check(2, 28, AlphaTooFew)   // 0.9–23.5%
	check(10, 200, AlphaTooFew) // 2.4–9.0%: 79% power against 10%, under 80%
	check(12, 234, AlphaHolds)  // 80% power from 234 on
	check(0, 234, AlphaExcluded)
	check(4, 5, AlphaExcluded) // far above α, even from 5
	check(20, 100, AlphaExcluded)
	if got := (Proportion{CILow: undefined(), CIHigh: undefined()}).JudgeAlpha(0.05, 0.95); got != AlphaTooFew {
		t.Errorf("no experiments: %q", got)
	}
}

func TestJudgeAlphaAtMost(t *testing.T) {
	check := func(k, n int, want string) {
		t.Helper()
		p, _ := BinomialCI(k, n, 0.95)
		if got := p.JudgeAlphaAtMost(0.05, 0.95); got != want {
			t.Errorf("%d of %d: %s, want %s", k, n, got, want)
		}
	}
	check(2, 240, AlphaHolds)     // below α is what an upper bound promises
	check(12, 240, AlphaHolds)    // around α
	check(30, 200, AlphaExcluded) // above α
	check(2, 200, AlphaTooFew)    // under 80% power against 2α
	check(0, 5, AlphaTooFew)
}

// TestAlphaPowerReference checks AlphaPower and ExperimentsToJudgeAlpha
// against scipy.stats.binom (testdata/gen_alpha_power.py).
func TestAlphaPowerReference(t *testing.T) {
	for _, c := range []struct {
		k            int
		alpha, conf  float64
		power        float64
		conservative bool
	}{
		{20, 0.05, 0.95, 0.132953323434, false},
		{72, 0.05, 0.95, 0.29141523557, true},
		{73, 0.05, 0.95, 0.305526926762, true},
		{200, 0.05, 0.95, 0.792522398663, true},
		{234, 0.05, 0.95, 0.800144028512, true},
		{20, 0.01, 0.95, 0.0598989785489, false},
		{72, 0.01, 0.95, 0.0564759930049, false},
		{73, 0.01, 0.95, 0.0588433123128, false},
		{200, 0.01, 0.95, 0.213277534297, false},
		{234, 0.01, 0.95, 0.190861168232, false},
		{20, 0.1, 0.95, 0.19579221454, false},
		{72, 0.1, 0.95, 0.593660002526, true},
		{73, 0.1, 0.95, 0.615914671422, true},
		{200, 0.1, 0.95, 0.971723425017, true},
		{234, 0.1, 0.95, 0.987628261076, true},
	} {
		p, cons := AlphaPower(c.k, c.alpha, c.conf)
		if math.Abs(p-c.power) > 1e-9 || cons != c.conservative {
			t.Errorf("AlphaPower(%d, %v, %v) = %.12g, %v; scipy %.12g, %v", c.k, c.alpha, c.conf, p, cons, c.power, c.conservative)
		}
	}
	for _, c := range []struct {
		alpha, conf        float64
		need, inflatedOnly int
	}{
		{0.05, 0.95, 234, 234}, {0.01, 0.95, 1235, 1235}, {0.1, 0.95, 111, 111}, {0.05, 0.99, 332, 332},
	} {
		if got := ExperimentsToJudgeAlpha(c.alpha, c.conf, false); got != c.need {
			t.Errorf("ExperimentsToJudgeAlpha(%v, %v) = %d, scipy %d", c.alpha, c.conf, got, c.need)
		}
		if got := ExperimentsToJudgeAlpha(c.alpha, c.conf, true); got != c.inflatedOnly {
			t.Errorf("ExperimentsToJudgeAlpha(%v, %v, inflated only) = %d, scipy %d", c.alpha, c.conf, got, c.inflatedOnly)
		}
	}
}
