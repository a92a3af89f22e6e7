package changepoint

// What the detector could find if it knew what it has to estimate
// (oracle_test.go): the step test of each true step between its true
// neighbours, at the likeliest split under AR(1).

// Oracle locates the step near tau in xs[lo:hi] (glsSplit) and tests it
// there (tester.p) with the noise's lag-1 autocorrelation rho given, so
// the test makes no allowance for an estimate's error.
func Oracle(xs []float64, lo, tau, hi, minSeg int, rho float64) (at int, p float64, ok bool) {
	return oracle(xs, lo, tau, hi, minSeg, rho, false)
}

// OracleEstimated is Oracle with rho estimated as the detector estimates
// it, from the residuals around the true segments (residualRho), and its
// error allowed for as the detector allows for it (rhoDF) unless exact:
// steps are the series' true steps and k the one tested.
func OracleEstimated(xs []float64, steps []int, k, minSeg int, exact bool) (at int, p float64, ok bool) {
	lo, hi := 0, len(xs)
	if k > 0 {
		lo = steps[k-1]
	}
	if k+1 < len(steps) {
		hi = steps[k+1]
	}
	return oracle(xs, lo, steps[k], hi, minSeg, residualRho(xs, steps), !exact)
}

func oracle(xs []float64, lo, tau, hi, minSeg int, rho float64, estimated bool) (at int, p float64, ok bool) {
	at, ok = glsSplit(xs, lo, tau, hi, minSeg, rho)
	if !ok {
		return 0, 1, false
	}
	t := tester{xs: xs, minSeg: minSeg, rho: rho, estimated: estimated}
	return at, t.p(lo, at, hi), true
}
