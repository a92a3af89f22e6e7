package analysis

import (
	"math"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"
)

// studentTQuantile returns the p-quantile of Student's t distribution with
// df degrees of freedom to 1e-12 relative at every df (reference:
// scipy.stats.t.ppf, checked in reference_test.go against "t_ppf" of
// testdata/reference.json, and through studentTUpperQuantile in
// tquantile_reference_test.go, 1 to 10⁷ df, and
// tquantile_largedf_test.go, to 10²⁰ df); past 10⁵ df it is the
// Cornish–Fisher expansion (cornishFisherT). df ≤ 0 gives NaN. gonum's
// distuv.StudentsT.Quantile and CDF are off by up to ~1e-8 relative
// because its incomplete beta function converges loosely; it only gives
// the start of studentTUpperQuantile's Newton steps on an accurate tail
// probability (studentTTail).
func studentTQuantile(p, df float64) float64 {
	switch {
	case math.IsNaN(p) || !(df > 0) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	case p < 0.5: // by symmetry the p-quantile is −(1−p)-quantile
		return -studentTUpperQuantile(p, df)
	}
	return studentTUpperQuantile(1-p, df)
}

// studentTUpperQuantile returns x > 0 with P(T > x) = q for 0 < q < 0.5,
// taking q itself (never 1 − q, which keeps only −log10(q) + 16 digits of
// it): Newton steps on log P(T > x) against log x, y ← y − (log S(x) −
// log q)/(−x·f(x)/S(x)) with y = log x, from gonum's quantile (or, in the
// far tail, the normal one).
func studentTUpperQuantile(q, df float64) float64 {
	if !(df > 0) {
		return math.NaN()
	}
	if df > largeDF {
		return cornishFisherT(q, df)
	}
	var x float64
	if q > 1e-6 {
		x = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - q)
	}
	if !(x > 0) || math.IsInf(x, 1) {
		x = -mathext.NormalQuantile(q)
	}
	dens := tDensity(df)
	lq := math.Log(q)
	for range 200 {
		tail := studentTTail(x, df)
		if !(tail > 0) { // underflow: step back towards the body
			x /= 2
			continue
		}
		f := math.Log(tail) - lq
		dfdy := -x * dens(x) / tail
		if !(dfdy < 0) {
			break
		}
		step := math.Max(-5, math.Min(5, f/dfdy))
		x *= math.Exp(-step)
		if math.Abs(step) < 1e-13 { // quadratic convergence: x is now good to ~1e-26
			break
		}
	}
	return x
}

// largeDF is the df past which studentTUpperQuantile takes the
// Cornish–Fisher expansion: the incomplete beta's continued fraction, at
// a = ν/2 next to its switch point, loses accuracy there (~4e-11 relative
// at 10⁶–10⁷ df, 10⁻⁸ at 10⁹, a wrong quantile by 10¹⁶), while the
// expansion to ν⁻⁴, whose first omitted term is g₅/ν⁵ ≈ 27z¹¹/368640/ν⁵,
// is within 3e-15 of x past 10⁵ df even at q = 10⁻⁹⁹ (z ≈ 21.2).
const largeDF = 1e5

// cornishFisherT is the upper q-quantile of Student's t with df degrees of
// freedom by its Cornish–Fisher expansion about the normal quantile z,
// t = z + g₁/ν + g₂/ν² + g₃/ν³ + g₄/ν⁴ (Abramowitz & Stegun 26.7.5), for
// large ν. Checked against scipy.stats.t.isf refined by Newton steps from
// 100,001 to 10⁷ df (testdata/gen_tquantile_reference.py) and from 10⁸ to
// 10²⁰ df (testdata/gen_tquantile_largedf.py).
func cornishFisherT(q, df float64) float64 {
	z := -mathext.NormalQuantile(q)
	z2 := z * z
	g1 := (z2 + 1) * z / 4
	g2 := ((5*z2+16)*z2 + 3) * z / 96
	g3 := (((3*z2+19)*z2+17)*z2 - 15) * z / 384
	g4 := ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) * z / 92160
	return z + (g1+(g2+(g3+g4/df)/df)/df)/df
}

// tDensity returns Student's t density with df degrees of freedom.
func tDensity(df float64) func(float64) float64 {
	c := -logBeta(df/2, 0.5) - 0.5*math.Log(df)
	return func(x float64) float64 {
		return math.Exp(c - (df+1)/2*math.Log1p(x*x/df))
	}
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
	// log x and log y from whichever of x, y is the smaller, as log1p:
	// near 1, x itself has lost the digits y keeps.
	lx, ly := math.Log(x), math.Log(y)
	if x > 0.5 {
		lx = math.Log1p(-y)
	} else {
		ly = math.Log1p(-x)
	}
	front := math.Exp(a*lx + b*ly - logBeta(a, b))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, y)/b
}

// logBeta returns log B(a, b) = lgamma(a) + lgamma(b) − lgamma(a+b) for
// a, b > 0. Where a or b is large the three terms are of order a·log a and
// their difference is formed from Stirling's series instead (as
// Didonato & Morris 1992, "Algorithm 708", ACM TOMS 18: 360–373, algdiv):
// lgamma(a) − lgamma(a+b) = −(a − ½)·log1p(b/a) − b·log(a+b) + b +
// δ(a) − δ(a+b), δ the remainder of Stirling's formula, which keeps it to
// ~1e-16 relative where the plain difference lost up to 1e-10 at
// a = 5·10⁴ (Student's t with 10⁵ degrees of freedom).
func logBeta(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if a < 10 {
		la, _ := math.Lgamma(a)
		lb, _ := math.Lgamma(b)
		lab, _ := math.Lgamma(a + b)
		return la + lb - lab
	}
	lb, _ := math.Lgamma(b)
	ab := a + b
	return lb - (a-0.5)*math.Log1p(b/a) - b*math.Log(ab) + b + stirlingDelta(a) - stirlingDelta(ab)
}

// stirlingDelta returns δ(x) = lgamma(x) − ((x − ½)·log x − x + ½·log 2π)
// for x ≥ 10 from its asymptotic series (Abramowitz & Stegun 6.1.41),
// Σ B_2k/(2k(2k−1)x^(2k−1)) to k = 7; the first term left out is below
// 4e-17 there.
func stirlingDelta(x float64) float64 {
	z := 1 / (x * x)
	return (1.0/12 + z*(-1.0/360+z*(1.0/1260+z*(-1.0/1680+z*(1.0/1188+z*(-691.0/360360+z*(1.0/156))))))) / x
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
