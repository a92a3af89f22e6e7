package analysis

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// studentTQuantile returns the p-quantile of Student's t distribution with
// df degrees of freedom to about 1e-14 relative (reference:
// scipy.stats.t.ppf, checked in reference_test.go against "t_ppf" of
// testdata/reference.json). gonum's distuv.StudentsT.Quantile and CDF are
// off by up to ~1e-8 relative because its incomplete beta function
// converges loosely; its quantile only starts Newton steps on an accurate
// tail probability (studentTTail), q ← q − (F(q) − p)/f(q).
func studentTQuantile(p, df float64) float64 {
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	q := dist.Quantile(p)
	if math.IsNaN(q) || math.IsInf(q, 0) || p <= 0 || p >= 1 || p == 0.5 {
		if p == 0.5 {
			return 0
		}
		return q
	}
	// Work in the lower tail: by symmetry the p-quantile is −(1−p)-quantile.
	sign, tail := 1.0, 1-p
	if p < 0.5 {
		sign, tail = -1, p
	}
	x := math.Abs(q)
	for range 20 {
		r := studentTTail(x, df) - tail // P(T > x) − tail
		f := dist.Prob(x)
		if f <= 0 || math.IsNaN(r) {
			break
		}
		step := r / f // P(T > x) falls as x grows
		x += step
		if math.Abs(step) <= 4e-16*x {
			break
		}
	}
	return sign * x
}

// studentTTail returns P(T > x) for x ≥ 0 with df degrees of freedom:
// ½·I_{df/(df+x²)}(df/2, ½) (Abramowitz & Stegun 26.7.1), with 1 − df/(df+x²)
// passed as x²/(df+x²) so that near x = 0, where the argument is close to
// 1, no digits cancel (gonum's mathext.RegIncBeta forms 1 − x itself and
// was off by up to 8e-9 relative at t = 1e-8; see TestTailsScipy). For any
// x, studentTSF.
func studentTTail(x, df float64) float64 {
	x2 := x * x
	return 0.5 * regIncBeta(df/2, 0.5, df/(df+x2), x2/(df+x2))
}

// regIncBeta returns the regularized incomplete beta function I_x(a, b),
// given x and y = 1 − x computed without cancellation, by the continued
// fraction of Numerical Recipes (betacf, modified Lentz) iterated to full
// double precision, using the symmetry I_x(a, b) = 1 − I_y(b, a) where the
// fraction converges faster.
func regIncBeta(a, b, x, y float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x) + b*math.Log(y) - (la + lb - lab))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, y)/b
}

// betaCF evaluates the continued fraction of the incomplete beta function.
func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	nonzero := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1/nonzero(1-qab*x/qap)
	h := d
	// term applies one coefficient of the fraction and returns the factor
	// it multiplied h by.
	term := func(aa float64) float64 {
		d = 1 / nonzero(1+aa*d)
		c = nonzero(1 + aa/c)
		h *= d * c
		return d * c
	}
	for m := 1; m <= 100000; m++ {
		fm := float64(m)
		m2 := 2 * fm
		term(fm * (b - fm) * x / ((qam + m2) * (a + m2)))
		if del := term(-(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))); math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return h
}
