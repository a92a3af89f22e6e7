package analysis

// What an A/A false-positive interval says about α (JudgeAlpha).
const (
	AlphaHolds    = "holds α"
	AlphaExcluded = "EXCLUDES α"
	AlphaTooFew   = "too few experiments to judge α"
)

// AlphaTooWide is how far above α the upper end of a false-positive
// interval may reach for "holds α" to mean something: 0 of 5 A/A
// experiments gives a 95% interval of 0–52%, which holds α = 5% and also
// a test that is wrong every other time. At 5α the interval must at least
// rule out a test wrong one time in four (α = 0.05).
const AlphaTooWide = 5

// JudgeAlpha judges an A/A false-positive rate against α: AlphaExcluded
// when the interval excludes α (informative however few the experiments),
// AlphaTooFew when it holds α but also rates above AlphaTooWide·α, else
// AlphaHolds. With α = 0.05 and 95% Clopper–Pearson intervals, 0 false
// positives need 13 experiments to judge, 2 need 28.
func (p Proportion) JudgeAlpha(alpha float64) string {
	switch {
	case p.Excludes(alpha):
		return AlphaExcluded
	case !p.CIHigh.Defined() || float64(p.CIHigh) > AlphaTooWide*alpha:
		return AlphaTooFew
	}
	return AlphaHolds
}

// JudgeAlphaAtMost is JudgeAlpha for a procedure whose guarantee is an
// upper bound, such as an anytime-valid test (SequentialPaired), which is
// conservative at a finite horizon: only a rate significantly above α
// fails.
func (p Proportion) JudgeAlphaAtMost(alpha float64) string {
	switch {
	case p.CILow.Defined() && float64(p.CILow) > alpha:
		return AlphaExcluded
	case p.CIHigh.Defined() && float64(p.CIHigh) < alpha:
		return AlphaHolds
	}
	return p.JudgeAlpha(alpha)
}
