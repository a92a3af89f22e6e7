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

// JudgeAlpha judges an A/A false-positive rate, with its Clopper–Pearson
// interval at the given confidence, against α: AlphaExcluded when the
// interval excludes α (informative however few the experiments);
// AlphaTooFew when the experiments are fewer than ExperimentsToJudgeAlpha
// (too few to detect, with 80% power, a test that is wrong 2α of the time,
// or to tell a test that never rejects: 20 experiments at α = 5% detect a
// 10% rate 13% of the time and can never flag a conservative test) or
// when the interval also holds rates above AlphaTooWide·α; else
// AlphaHolds.
func (p Proportion) JudgeAlpha(alpha, confidence float64) string {
	switch {
	case p.Excludes(alpha):
		return AlphaExcluded
	case p.N < ExperimentsToJudgeAlpha(alpha, confidence, false):
		return AlphaTooFew
	case !p.CIHigh.Defined() || float64(p.CIHigh) > AlphaTooWide*alpha:
		return AlphaTooFew
	}
	return AlphaHolds
}

// JudgeAlphaAtMost is JudgeAlpha for a procedure whose guarantee is an
// upper bound, such as an anytime-valid test (SequentialPaired), which is
// conservative at a finite horizon: only a rate significantly above α
// fails, and the experiments need only the power to detect 2α.
func (p Proportion) JudgeAlphaAtMost(alpha, confidence float64) string {
	switch {
	case p.CILow.Defined() && float64(p.CILow) > alpha:
		return AlphaExcluded
	case p.N < ExperimentsToJudgeAlpha(alpha, confidence, true):
		return AlphaTooFew
	case p.CIHigh.Defined() && float64(p.CIHigh) < alpha:
		return AlphaHolds
	}
	return p.JudgeAlpha(alpha, confidence)
}
