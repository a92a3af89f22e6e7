package analysis

import "testing"

func TestJudgeAlpha(t *testing.T) {
	check := func(k, n int, want string) {
		t.Helper()
		p, _ := BinomialCI(k, n, 0.95)
		if got := p.JudgeAlpha(0.05); got != want {
			t.Errorf("%d of %d (CI %.3f–%.3f): %q, want %q", k, n, float64(p.CILow), float64(p.CIHigh), got, want)
		}
	}
	check(0, 5, AlphaTooFew)   // 0–52%
	check(0, 12, AlphaTooFew)  // 0–26.5%
	check(0, 13, AlphaHolds)   // 0–24.7%
	check(2, 20, AlphaTooFew)  // 1.2–31.7%
	check(2, 28, AlphaHolds)   // 0.9–23.5%
	check(3, 40, AlphaHolds)   // 1.6–20.4%
	check(4, 5, AlphaExcluded) // far above α, even from 5
	check(20, 100, AlphaExcluded)
	if got := (Proportion{CILow: undefined(), CIHigh: undefined()}).JudgeAlpha(0.05); got != AlphaTooFew {
		t.Errorf("no experiments: %q", got)
	}
}

func TestJudgeAlphaAtMost(t *testing.T) {
	check := func(k, n int, want string) {
		t.Helper()
		p, _ := BinomialCI(k, n, 0.95)
		if got := p.JudgeAlphaAtMost(0.05); got != want {
			t.Errorf("%d of %d: %s, want %s", k, n, got, want)
		}
	}
	check(2, 200, AlphaHolds)     // 0.1–3.6%: below α is what an upper bound promises
	check(10, 200, AlphaHolds)    // around α
	check(30, 200, AlphaExcluded) // above α
	check(0, 5, AlphaTooFew)
}
