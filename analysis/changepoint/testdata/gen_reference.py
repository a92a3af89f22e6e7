#!/usr/bin/python3
"""Generate reference.json: fixed series with known steps and SciPy's 20%
trimmed means (scipy.stats.trim_mean) of the segments on either side of
each step, for analysis/changepoint/changepoint_test.go; and, for
reference_test.go, the E-divisive split (Matteson & James 2014's Q, summed
pair by pair) of random series with outliers, Cohen's d of random samples
(numpy) and the effect floor's trimmed version (scipy.stats.trim_mean,
scipy.stats.mstats.winsorize), the pooled trimmed t of Yuen & Dixon (scipy.stats.ttest_ind(a, b,
trim=0.2), equal_var=True: statistic and p; the normal z of the same two-sided p,
scipy.stats.norm.isf(p/2)), the AR(1) variance factor of a two-sample
contrast (the quadratic form c'Rc/c'c with R the Toeplitz matrix of
rho^|i-j|, numpy), the generalised-least-squares t of a step under
AR(1) errors and its best split (numpy, the full correlation matrix),
and Lausen & Schumacher's (1992) p of a maximally
selected statistic against the Bonferroni bound (scipy.stats.norm).

The series are drawn with numpy (seeded); the steps are placed by
construction and large enough that the detector must find exactly them.
before/after reach to the neighbouring step or the series' end. Regenerate
with Debian's python3-scipy (`apt-get install python3-scipy`):

    /usr/bin/python3 analysis/changepoint/testdata/gen_reference.py > analysis/changepoint/testdata/reference.json
"""
import json

import numpy as np
import scipy
from scipy import stats


def case(name, n, steps, spike=None, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    xs = 100 + scale * rng.standard_normal(n)
    for at, size in steps:
        xs[at:] += size
    if spike is not None:
        xs[spike[0]] += spike[1]
    xs = [round(float(x), 6) for x in xs]
    cps = [at for at, _ in steps]
    out = []
    for k, at in enumerate(cps):
        lo = cps[k - 1] if k > 0 else 0
        hi = cps[k + 1] if k + 1 < len(cps) else n
        a, b = np.array(xs[lo:at]), np.array(xs[at:hi])
        out.append({"index": at, "before": float(stats.trim_mean(a, 0.2)), "after": float(stats.trim_mean(b, 0.2))})
    return {"name": name, "series": xs, "steps": out}


cases = [
    case("one step of 5 sigma", 40, [(20, 5.0)], seed=1),
    case("two steps, up then down", 60, [(20, 4.0), (40, -6.0)], seed=2),
    case("step of 3 sigma in 100 points", 100, [(50, 3.0)], seed=3),
    case("step near the end", 50, [(42, 6.0)], seed=4),
    case("stationary", 50, [], seed=5),
    case("stationary with a spike", 50, [], spike=(25, 12.0), seed=6),
    case("three steps, wide noise", 120, [(30, 20.0), (70, 30.0), (95, -25.0)], seed=7, scale=5.0),
]


def q_stat(x, y, alpha=0.5):
    """Matteson & James (2014), eq. (5)-(6): the scaled sample divergence
    of X and Y, written out pair by pair (no running sums)."""
    m, k = len(x), len(y)
    between = sum(abs(a - b) ** alpha for a in x for b in y)
    within_x = sum(abs(x[i] - x[j]) ** alpha for i in range(m) for j in range(i + 1, m))
    within_y = sum(abs(y[i] - y[j]) ** alpha for i in range(k) for j in range(i + 1, k))
    return m * k / (m + k) * (2 * between / (m * k) - within_x / (m * (m - 1) / 2) - within_y / (k * (k - 1) / 2))


def split_case(n, lo, hi, min_seg, seed):
    """The τ in [lo+min_seg, hi−min_seg] maximising Q of x[lo:τ], x[τ:hi]."""
    rng = np.random.default_rng(seed)
    xs = [round(float(v), 6) for v in 100 + rng.standard_normal(n) + (rng.random(n) < 0.1) * 8]
    qs = {t: q_stat(xs[lo:t], xs[t:hi]) for t in range(lo + min_seg, hi - min_seg + 1)}
    tau = max(qs, key=qs.get)
    return {"series": xs, "lo": lo, "hi": hi, "min_segment": min_seg, "tau": tau, "q": qs[tau]}


def effect_case(n1, n2, shift, seed):
    """Cohen's d (Cohen 1988): |mean(b) − mean(a)| over the pooled standard
    deviation, sqrt(((n1−1)s1² + (n2−1)s2²)/(n1+n2−2)), s with ddof=1."""
    rng = np.random.default_rng(seed)
    a = [round(float(v), 6) for v in 10 + 2 * rng.standard_normal(n1)]
    b = [round(float(v), 6) for v in 10 + shift + 3 * rng.standard_normal(n2)]
    s1, s2 = np.std(a, ddof=1), np.std(b, ddof=1)
    pooled = np.sqrt(((n1 - 1) * s1 ** 2 + (n2 - 1) * s2 ** 2) / (n1 + n2 - 2))
    return {"a": a, "b": b, "d": float(abs(np.mean(b) - np.mean(a)) / pooled)}


def trimmed_effect_case(n1, n2, shift, seed):
    """The effect floor's trimmed measure: |trim_mean(b) − trim_mean(a)|
    (scipy.stats.trim_mean, 20%) over the pooled standard deviation of
    Cohen's d with each side's s² its 20% winsorised variance
    (scipy.stats.mstats.winsorize, ddof=1) over that of a winsorised
    standard normal, (1 − 2γ) − 2c·φ(c) + 2γc², c = Φ⁻¹(1 − γ)."""
    rng = np.random.default_rng(seed)
    a = [round(float(v), 6) for v in 10 + 2 * rng.standard_normal(n1) + (rng.random(n1) < 0.1) * 12]
    b = [round(float(v), 6) for v in 10 + shift + 3 * rng.standard_normal(n2)]
    g = 0.2
    c = scipy.stats.norm.ppf(1 - g)
    wvar = (1 - 2 * g) - 2 * c * scipy.stats.norm.pdf(c) + 2 * g * c * c

    def s2(x):
        return float(np.var(np.asarray(scipy.stats.mstats.winsorize(np.array(x), limits=(g, g))), ddof=1)) / wvar
    pooled = np.sqrt(((n1 - 1) * s2(a) + (n2 - 1) * s2(b)) / (n1 + n2 - 2))
    d = abs(scipy.stats.trim_mean(b, g) - scipy.stats.trim_mean(a, g)) / pooled
    return {"a": a, "b": b, "d": float(d), "winsorized_normal_var": wvar}


trimmed_effects = [trimmed_effect_case(12, 20, 1.5, 24), trimmed_effect_case(6, 6, -4.0, 25),
                   trimmed_effect_case(40, 9, 0.2, 26), trimmed_effect_case(23, 31, 2.5, 27)]

splits = [split_case(30, 0, 30, 3, 11), split_case(60, 5, 55, 6, 12), split_case(45, 0, 45, 2, 13),
          split_case(80, 10, 80, 8, 14)]
effects = [effect_case(12, 20, 1.5, 21), effect_case(6, 6, -4.0, 22), effect_case(40, 9, 0.2, 23)]


def yuen_case(n1, n2, shift, seed):
    """Yuen & Dixon (1973), the pooled trimmed t, through SciPy, on
    samples with an outlier in the first."""
    rng = np.random.default_rng(seed)
    a = [round(float(v), 6) for v in 10 + rng.standard_normal(n1)]
    b = [round(float(v), 6) for v in 10 + shift + 2 * rng.standard_normal(n2)]
    a[1] += 9
    r = stats.ttest_ind(a, b, equal_var=True, trim=0.2)
    return {"a": a, "b": b, "t": float(-r.statistic), "p": float(r.pvalue), "z": float(stats.norm.isf(r.pvalue / 2))}


def ar_case(m, k, rho):
    """c'Rc / c'c, c = 1/m on the first m points and -1/k on the next k,
    R[i][j] = rho^|i-j| (the AR(1) correlation matrix)."""
    c = np.r_[np.full(m, 1 / m), np.full(k, -1 / k)]
    idx = np.arange(m + k)
    R = rho ** np.abs(idx[:, None] - idx[None, :])
    return {"m": m, "k": k, "rho": rho, "factor": float(c @ R @ c / (c @ c))}


def maxsel_case(z, n, min_seg):
    """min(Bonferroni over the n-2*min_seg+1 splits, Lausen & Schumacher
    1992: phi(b)(b-1/b)log(e2(1-e1)/((1-e2)e1)) + 4phi(b)/b), at most 1."""
    splits = n - 2 * min_seg + 1
    p = splits * 2 * stats.norm.sf(z)
    e1 = min_seg / n
    if e1 < 0.5 and z > 1:
        e2 = 1 - e1
        phi = stats.norm.pdf(z)
        p = min(p, phi * (z - 1 / z) * np.log(e2 * (1 - e1) / ((1 - e2) * e1)) + 4 * phi / z)
    return {"z": z, "n": n, "min_segment": min_seg, "p": float(min(1.0, p))}


def gls_case(n, lo, tau, hi, rho, shift, min_seg, seed):
    """Generalised least squares of x[lo:hi] on an intercept and a step at
    tau under AR(1) errors, with the full correlation matrix R[i][j] =
    rho^|i-j| (no Prais-Winsten transformation): beta = (X'WX)^-1 X'Wy,
    W = R^-1; t = beta_step / sqrt(s2 [(X'WX)^-1]_22), s2 = e'We/(m-2).
    split is the tau' in [lo+min_seg, hi-min_seg] of the smallest e'We.
    The noise is AR(1) with innovations clipped at ±2, so that no value is
    an outlier that the detector would replace (the Go test checks)."""
    rng = np.random.default_rng(seed)
    e = np.zeros(n)
    e[0] = np.clip(rng.standard_normal(), -2, 2)
    for i in range(1, n):
        e[i] = rho * e[i - 1] + np.sqrt(1 - rho * rho) * np.clip(rng.standard_normal(), -2, 2)
    xs = 100 + e
    xs[tau:] += shift
    xs = [round(float(v), 6) for v in xs]
    y = np.array(xs[lo:hi])
    m = hi - lo
    idx = np.arange(m)
    W = np.linalg.inv(rho ** np.abs(idx[:, None] - idx[None, :]))

    def fit(t):
        X = np.c_[np.ones(m), (idx >= t - lo).astype(float)]
        A = np.linalg.inv(X.T @ W @ X)
        beta = A @ X.T @ W @ y
        r = y - X @ beta
        return beta, A, float(r @ W @ r)

    beta, A, rss = fit(tau)
    t = beta[1] / np.sqrt(rss / (m - 2) * A[1, 1])
    split = min(range(lo + min_seg, hi - min_seg + 1), key=lambda c: fit(c)[2])
    return {"series": xs, "lo": lo, "tau": tau, "hi": hi, "rho": rho, "min_segment": min_seg,
            "t": float(t), "split": split}


glss = [gls_case(60, 0, 30, 60, 0.7, 2.0, 6, 41), gls_case(80, 10, 35, 70, 0.5, -1.5, 6, 42),
        gls_case(40, 0, 12, 40, 0.0, 1.0, 4, 43), gls_case(120, 20, 90, 120, 0.85, 3.0, 6, 44)]
yuens = [yuen_case(12, 20, 1.5, 31), yuen_case(6, 6, -4.0, 32), yuen_case(40, 9, 0.7, 33)]
ars = [ar_case(6, 6, 0.5), ar_case(20, 100, 0.7), ar_case(50, 50, 0.3), ar_case(7, 13, 0.9)]
maxsels = [maxsel_case(3.0, 200, 6), maxsel_case(4.5, 60, 6), maxsel_case(2.5, 14, 6), maxsel_case(6.0, 1000, 10)]
print(json.dumps({"scipy": scipy.__version__, "cases": cases, "splits": splits, "effects": effects,
                  "yuen": yuens, "ar": ars, "maxsel": maxsels, "gls": glss,
                  "trimmed_effects": trimmed_effects}, indent=1))
