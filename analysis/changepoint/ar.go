package changepoint

import (
	"math"
	"slices"
)

// The step test under AR(1) noise. Neighbouring builds share machine
// state, so a history's noise is autocorrelated, and a test that only
// widens the variance of the difference of two means (arInflation) still
// compares the means of two runs of wandering noise. Generalised least
// squares uses the structure instead: after the Prais–Winsten
// transformation (S. J. Prais and C. B. Winsten, "Trend estimators and
// serial correlation", Cowles Commission Discussion Paper 383, 1954),
//
//	y_0 = √(1−ρ²)·x_0,  y_t = x_t − ρ·x_{t−1},
//
// the noise is independent innovations, and a step of δ at τ becomes a
// step of (1−ρ)δ plus a one-build jump of δ at τ itself. The jump is what
// the means miss: at ρ 0.7, for a 2σ step between segments of 20 builds
// the transformed fit's standard error is about 0.6σ against 0.7σ for
// the difference of means, and it locates the step where the jump is
// rather than where the runs of noise happen to part. At ρ = 0 the
// transformation is the identity and the test is Student's pooled t.

// glsFit holds the sums of the least-squares fit of transformed values y
// on the transformed intercept u and the transformed step at a split.
type glsFit struct {
	y, u        []float64
	c           float64 // 1 − ρ
	a11, b1, yy float64 // Σu², Σu·y, Σy²
}

// newGLSFit transforms xs (Prais–Winsten) for lag-1 autocorrelation rho.
func newGLSFit(xs []float64, rho float64) glsFit {
	n := len(xs)
	f := glsFit{y: make([]float64, n), u: make([]float64, n), c: 1 - rho}
	r0 := math.Sqrt(1 - rho*rho)
	f.y[0], f.u[0] = r0*xs[0], r0
	for t := 1; t < n; t++ {
		f.y[t], f.u[t] = xs[t]-rho*xs[t-1], f.c
	}
	for t := range n {
		f.a11 += f.u[t] * f.u[t]
		f.b1 += f.u[t] * f.y[t]
		f.yy += f.y[t] * f.y[t]
	}
	return f
}

// step returns, for the split at j (0 < j < n) with tail = Σ_{t>j} y_t,
// the step's coefficient's numerator r and its variance factor v: the
// step regressor's sums with the intercept projected out (the
// Frisch–Waugh partial regression), so that δ̂ = r/v with variance σ²/v
// and the residual sum of squares falls by r²/v.
func (f glsFit) step(j int, tail float64) (r, v float64) {
	after := float64(len(f.y) - 1 - j)
	s2 := 1 + after*f.c*f.c // Σ s_t²: 1 at j, 1 − ρ after it
	s12 := f.c + after*f.c*f.c
	b2 := f.y[j] + f.c*tail
	return b2 - s12*f.b1/f.a11, s2 - s12*s12/f.a11
}

// glsZ is the generalised-least-squares t of a step at tau in xs[lo:hi]
// under AR(1) noise of lag-1 autocorrelation rho: the step's
// coefficient in the fit of the transformed series (isolated outliers
// first replaced, cleanAR) on an intercept and the transformed step,
// over its standard error, the innovations' variance from the fit's
// residual sum of squares on n − 2 degrees of freedom. ok is false when
// the fit leaves no residual.
func glsZ(xs []float64, lo, tau, hi int, rho float64) (t, df float64, ok bool) {
	return glsMaxT(xs, lo, tau, tau, tau, hi, rho)
}

// glsMaxT is glsZ's t of largest |t| over the splits from to to (lo <
// from ≤ to < hi), the outliers replaced around the split at cur: one
// cleaning and one transformation for all of them.
func glsMaxT(xs []float64, lo, cur, from, to, hi int, rho float64) (t, df float64, ok bool) {
	f := newGLSFit(cleanAR(xs[lo:hi], cur-lo, rho), rho)
	tail := 0.0
	for _, y := range f.y[to-lo+1:] {
		tail += y
	}
	df = float64(hi - lo - 2)
	for j := to - lo; j >= from-lo; j-- {
		r, v := f.step(j, tail)
		tail += f.y[j]
		rss := f.yy - f.b1*f.b1/f.a11 - r*r/v
		if !(v > 0) || !(rss > 1e-12*f.yy) {
			continue
		}
		if tj := r / math.Sqrt(v*rss/df); !ok || math.Abs(tj) > math.Abs(t) {
			t, ok = tj, true
		}
	}
	return t, df, ok
}

// glsSplit returns the split of xs[lo:hi], at least minSeg points from
// either end, that reduces the residual sum of squares of the transformed
// fit most (glsZ): the maximum-likelihood place of one step under AR(1)
// noise of lag-1 autocorrelation rho, the outliers replaced around cur,
// the split known so far. At ρ = 0 it is the least-squares split. ok is
// false when the segment is too short to split.
func glsSplit(xs []float64, lo, cur, hi, minSeg int, rho float64) (tau int, ok bool) {
	n := hi - lo
	if n < 2*minSeg {
		return 0, false
	}
	f := newGLSFit(cleanAR(xs[lo:hi], cur-lo, rho), rho)
	tail := 0.0 // Σ_{t>j} y_t, carried down from the end
	for t := n - 1; t > n-minSeg; t-- {
		tail += f.y[t]
	}
	best := math.Inf(-1)
	for j := n - minSeg; j >= minSeg; j-- {
		if r, v := f.step(j, tail); v > 0 && r*r/v >= best {
			best, tau = r*r/v, lo+j
		}
		tail += f.y[j]
	}
	return tau, true
}

// cleanAR returns xs with each isolated outlier replaced by its
// conditional mean under AR(1) given its two neighbours, m + ρ/(1+ρ²)·
// (x_{t−1} − m + x_{t+1} − m) (P. J. Brockwell and R. A. Davis, Time
// Series: Theory and Methods, 2nd ed., 1991, §5.1), m its side's level:
// one slow build would otherwise enter the transformed series twice (at
// t, and −ρ times at t + 1) and swamp the innovations' variance. An
// outlier is more than 3.5 robust standard deviations (1.4826 × the
// median absolute deviation of the residuals) from the median of its
// side of the split at j and more than 2.5 from each neighbour: a run of
// builds of a step's other side, put on this side by a split in the
// wrong place, is not isolated, so the cleaning does not pull the split
// its way.
func cleanAR(xs []float64, j int, rho float64) []float64 {
	n := len(xs)
	ma, mb := median(xs[:j]), median(xs[j:])
	res := make([]float64, n)
	for t, x := range xs {
		res[t] = x - mb
		if t < j {
			res[t] = x - ma
		}
	}
	out := slices.Clone(xs)
	s := madSigma(res, 0)
	if s == 0 {
		return out
	}
	bad := make([]bool, n)
	for t, x := range xs {
		bad[t] = math.Abs(res[t]) > 3.5*s &&
			(t == 0 || math.Abs(x-xs[t-1]) > 2.5*s) && (t == n-1 || math.Abs(x-xs[t+1]) > 2.5*s)
	}
	for t := range xs {
		if !bad[t] {
			continue
		}
		var sum float64
		if t > 0 && !bad[t-1] {
			sum += res[t-1]
		}
		if t+1 < n && !bad[t+1] {
			sum += res[t+1]
		}
		out[t] = xs[t] - res[t] + rho/(1+rho*rho)*sum
	}
	return out
}

// rhoDF is the degrees of freedom of a test whose variance has df of its
// own and is scaled by the AR(1) long-run factor (1+ρ)/(1−ρ) with ρ
// estimated from n points: the factor's log has variance about
// 4/((1−ρ²)·n), ρ̂'s variance being (1−ρ²)/n (M. S. Bartlett, "On the
// theoretical specification and sampling properties of autocorrelated
// time-series", JRSS Supplement 8, 1946), which is that of a variance
// on ν = (1−ρ²)·n/2 degrees of freedom; the two are combined as
// Satterthwaite combines the variances of independent estimates (F. E.
// Satterthwaite, "An approximate distribution of estimates of variance
// components", Biometrics Bulletin 2, 1946): 1/(1/df + 1/ν). Without it
// a series whose ρ̂ fell low by chance (its standard deviation is about
// 0.05 at ρ 0.7 and 200 points) took its wander for a step.
func rhoDF(df, rho float64, n int) float64 {
	nu := (1 - rho*rho) * float64(n) / 2
	if nu <= 0 {
		return df
	}
	return 1 / (1/df + 1/nu)
}
