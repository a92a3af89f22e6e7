#!/usr/bin/python3
"""Generate reference.json: expected statistics for analysis/reference_test.go.

The values are computed independently of perflab with Debian's python3-scipy
(scipy.stats) and numpy. Regenerate with:

    /usr/bin/python3 analysis/testdata/gen_reference.py > analysis/testdata/reference.json

(use the system python that has python3-scipy; `apt-get install python3-scipy`).
Statistics scipy leaves undefined (NaN) are written as null. Where perflab
deliberately reports a statistic as undefined although scipy returns a
number, the case lists it in "undefined_by_design" with the reason.
"""
import json
import math
import sys
import warnings

import numpy as np
import scipy
from scipy import stats

from gen_signedrank_ties import rounded_log_ratios

RESAMPLES = 100_000  # for the bootstrap reference; Go uses the same count
CONF = 0.95
ALPHA = 0.05
ARE = 3 / math.pi  # Pitman efficiency of the rank tests against t, normal errors


def num(x):
    x = float(x)
    return None if (math.isnan(x) or math.isinf(x)) else x


def summary(x):
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n == 0:
        return {"n": 0, "mean": None, "median": None, "sd": None, "cv": None, "min": None, "max": None}
    mean = np.mean(x)
    sd = np.std(x, ddof=1) if n >= 2 else float("nan")
    cv = sd / abs(mean) if (n >= 2 and mean != 0) else float("nan")
    return {"n": n, "mean": num(mean), "median": num(np.median(x)), "sd": num(sd), "cv": num(cv),
            "min": num(np.min(x)), "max": num(np.max(x))}


def rel(a, b):
    return None if (a is None or b is None or a == 0) else (b - a) / abs(a) * 100


def t_ppf(p, df):
    """The p-quantile of Student's t, refined by Newton steps on
    scipy.stats.t.sf: scipy 1.10's t.ppf (cephes stdtrit) is off by up to
    ~7e-9 relative from its own, accurate t.sf, so the raw ppf cannot serve
    as a 1e-12 reference."""
    q = float(stats.t.ppf(p, df))
    if p == 0.5:
        return 0.0
    upper = p > 0.5
    for _ in range(6):
        if upper:
            r = float(stats.t.sf(q, df)) - (1 - p)
        else:
            r = p - float(stats.t.cdf(q, df))
        q += r / float(stats.t.pdf(q, df))
    return q


def t_ppf_table():
    out = []
    for df in (1, 2, 3.5, 5.5, 7.3, 11.1, 19.7, 37.9, 100, 1234.5):
        for p in (0.025, 0.2, 0.8, 0.9, 0.975, 0.995):
            out.append({"p": p, "df": df, "scipy_ppf": float(stats.t.ppf(p, df)), "q": t_ppf(p, df)})
    return out


def welch(a, b):
    if len(a) < 2 or len(b) < 2:
        return {"t": None, "df": None, "p": None, "ci_low": None, "ci_high": None}
    res = stats.ttest_ind(a, b, equal_var=False)
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se2 = va + vb
    if se2 == 0:
        return {"t": None, "df": None, "p": None, "ci_low": None, "ci_high": None}
    df = se2 ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    q = t_ppf(1 - (1 - CONF) / 2, df)
    d = np.mean(b) - np.mean(a)
    se = math.sqrt(se2)
    return {"t": num(res.statistic), "df": num(df), "p": num(res.pvalue),
            "ci_low": num(d - q * se), "ci_high": num(d + q * se)}


def mann_whitney(a, b):
    if len(a) == 0 or len(b) == 0:
        return {"u": None, "p": None, "p_asymptotic": None, "exact": False}
    ties = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
    # scipy.stats.mannwhitneyu's method="auto" (_mwu_choose_method): exact
    # when either sample has at most 8 values and there are no ties.
    exact = (len(a) <= 8 or len(b) <= 8) and not ties
    asy = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    p = asy.pvalue
    if exact:
        p = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
    return {"u": num(asy.statistic), "p": num(p), "p_asymptotic": num(asy.pvalue), "exact": exact}


def kruskal(*groups):
    groups = [g for g in groups if len(g) > 0]
    if len(groups) < 2:
        return {"h": None, "p": None}
    try:
        res = stats.kruskal(*groups)
    except ValueError:  # all numbers identical
        return {"h": None, "p": None}
    return {"h": num(res.statistic), "p": num(res.pvalue)}


def trend(x):
    if len(x) < 3 or len(np.unique(x)) == 1:
        return {"rho": None, "p": None}
    res = stats.spearmanr(x, np.arange(len(x)))
    return {"rho": num(res.correlation), "p": num(res.pvalue)}


def bootstrap(a, b, seed):
    none = {"point": None, "low": None, "high": None, "se": None, "resamples": RESAMPLES,
            "pct_low": None, "pct_high": None}
    if len(a) < 2 or len(b) < 2:
        return none
    a, b = np.asarray(a, float), np.asarray(b, float)

    def diff(x, y, axis=-1):
        return np.median(y, axis=axis) - np.median(x, axis=axis)

    def pct(x, y, axis=-1):
        mx = np.median(x, axis=axis)
        return (np.median(y, axis=axis) - mx) / np.abs(mx) * 100

    kw = dict(n_resamples=RESAMPLES, confidence_level=CONF, method="percentile",
              vectorized=True, paired=False, batch=2000)
    with np.errstate(all="ignore"):
        r = stats.bootstrap((a, b), diff, random_state=np.random.default_rng(seed), **kw)
        out = dict(none)
        out.update(point=num(np.median(b) - np.median(a)), low=num(r.confidence_interval.low),
                   high=num(r.confidence_interval.high), se=num(r.standard_error))
        if np.median(a) != 0 and np.min(np.abs(a)) > 0:
            rp = stats.bootstrap((a, b), pct, random_state=np.random.default_rng(seed + 1), **kw)
            out.update(pct_low=num(rp.confidence_interval.low), pct_high=num(rp.confidence_interval.high))
    return out


def mde(a, b):
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se2 = va + vb
    if se2 == 0 or np.mean(a) == 0:
        return None
    df = se2 ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    # Welch's MDE divided by the square root of the Mann-Whitney test's
    # Pitman efficiency against t under normal errors, 3/pi (Lehmann 1975;
    # Noether 1987): the MDE of perflab's default primary test.
    welch_mde = (t_ppf(1 - ALPHA / 2, df) + t_ppf(0.8, df)) * math.sqrt(se2) / abs(np.mean(a)) * 100
    return num(welch_mde / math.sqrt(ARE))


def case(name, groups, note="", rescale=False):
    """Reference values for one data set. With rescale, the statistics are
    computed on the values divided by a power of two (exact in floating
    point) and location statistics multiplied back, because numpy's own
    variance overflows near 1e308 and underflows near 1e-308."""
    if rescale:
        s = 2.0 ** math.frexp(max(abs(float(v)) for g in groups for v in g))[1]
        c = case(name, [np.asarray(g, float) / s for g in groups], note)
        c["samples"] = [list(map(float, np.asarray(g, float))) for g in groups]
        for arm in ("a", "b"):
            for k in ("mean", "median", "sd", "min", "max"):
                c[arm][k] = mul(c[arm][k], s)
        c["hodges_lehmann"] = mul(c["hodges_lehmann"], s)
        for k in ("ci_low", "ci_high"):
            c["welch"][k] = mul(c["welch"][k], s)
        for k in ("point", "low", "high", "se"):
            c["bootstrap"][k] = mul(c["bootstrap"][k], s)
        return c
    a, b = np.asarray(groups[0], float), np.asarray(groups[1], float)
    sa, sb = summary(a), summary(b)
    hl = num(np.median(np.subtract.outer(b, a))) if len(a) and len(b) else None
    c = {
        "name": name, "note": note, "samples": [list(map(float, g)) for g in groups],
        "a": sa, "b": sb,
        "delta_pct_mean": rel(sa["mean"], sb["mean"]),
        "delta_pct_median": rel(sa["median"], sb["median"]),
        "hodges_lehmann": hl,
        "welch": welch(a, b),
        "mann_whitney": mann_whitney(a, b),
        "kruskal_wallis": kruskal(a, b),
        "kruskal_wallis_all": kruskal(*[np.asarray(g, float) for g in groups]),
        "bootstrap": bootstrap(a, b, 12345),
        "trend": {"a": trend(a), "b": trend(b)},
        "mde_pct": mde(a, b),
        "undefined_by_design": {},
    }
    # scipy returns p = 1 for Mann-Whitney when every value is tied (its
    # z is -inf); perflab reports that test as undefined (zero variance).
    if len(a) and len(b) and len(np.unique(np.concatenate([a, b]))) == 1:
        c["undefined_by_design"]["mann_whitney.p"] = "all values tied: the test has zero variance"
        c["mann_whitney"]["p"] = None
        c["mann_whitney"]["p_asymptotic"] = None
    return c


def mul(x, s):
    return None if x is None else x * s


def signed_rank_ci(nz, exact, tied, conf=CONF):
    """The interval that inverts the signed-rank test of the non-zero
    differences nz (Hollander & Wolfe, Nonparametric Statistical Methods,
    3rd ed., sec. 3.3; R's wilcox.test(conf.int=TRUE, correct=FALSE)): the
    k-th smallest and k-th largest of all Walsh averages, enumerated (tied:
    the rounded |nz|, whose equal values are the ties). Exact:
    k = R's qsignrank(alpha/2, n) from the null distribution of R+ (by
    convolving the n sign choices), at least 1. Otherwise
    k = ceil(n(n+1)/4 - z_{1-alpha/2} * se) with scipy's tie-corrected
    standard error of R+, at least 1: the Walsh average where R's uniroot of
    the normal statistic (a step function) lands."""
    n = len(nz)
    if n == 0:
        return None, None
    alpha = 1 - conf
    s = np.sort(nz)
    walsh = np.sort([(s[i] + s[j]) / 2 for i in range(n) for j in range(i, n)])
    total = len(walsh)
    if exact:
        counts = np.array([1.0])
        for r in range(1, n + 1):
            shifted = np.zeros(len(counts) + r)
            shifted[:len(counts)] += counts
            shifted[r:] += counts
            counts = shifted
        cdf = np.cumsum(counts) / 2.0 ** n
        k = int(np.argmax(cdf >= alpha / 2))
    else:
        _, tcounts = np.unique(tied, return_counts=True)
        se = math.sqrt((n * (n + 1) * (2 * n + 1) - np.sum(tcounts ** 3 - tcounts) / 2) / 24)
        k = math.ceil(n * (n + 1) / 4 - stats.norm.ppf(1 - alpha / 2) * se)
    k = min(max(k, 1), total)
    return num(walsh[k - 1]), num(walsh[total - k])


def paired_case(name, a, b, note=""):
    """Paired analysis of per-round log ratios log(b/a): scipy.stats.wilcoxon
    with its defaults zero_method="wilcox", correction=False; exact when at
    most 50 non-zero differences remain, none tied and none zero, else the
    normal approximation; the median and the Hodges-Lehmann estimate (median
    of the Walsh averages of the non-zero differences, as R's wilcox.test)
    and the signed-rank interval (signed_rank_ci), as % changes. The test
    (and which differences are zero or tied) is on the log ratios rounded
    as perflab's tolerance documents (gen_signedrank_ties.py,
    rounded_log_ratios: mirrored and equal ratios tie exactly); the median
    and the Walsh averages are of the float log ratios, as perflab's."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = np.log(b / a)
    dr = rounded_log_ratios(a, b)
    nz, nzr = d[dr != 0], dr[dr != 0]
    ties = len(np.unique(np.abs(nzr))) < len(nzr)
    exact = len(nz) <= 50 and not ties and len(nz) == len(d)
    out = {"name": name, "note": note, "a": list(map(float, a)), "b": list(map(float, b)),
           "n": len(d), "zeros": int(np.sum(dr == 0)), "exact": exact}
    pct = lambda x: num(math.expm1(x) * 100)
    if len(nz) == 0:
        out.update(statistic=None, p=None)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = stats.wilcoxon(dr, zero_method="wilcox", correction=False, method="exact" if exact else "approx")
        out.update(statistic=num(w.statistic), p=num(w.pvalue))
    ds = np.sort(nz)
    walsh = [(ds[i] + ds[j]) / 2 for i in range(len(ds)) for j in range(i, len(ds))]
    out.update(delta_pct=pct(np.median(d)), hodges_lehmann_pct=pct(np.median(walsh)) if walsh else None)
    sd = np.std(d, ddof=1)
    df = len(d) - 1
    # The paired t test's MDE over sqrt(ARE): the signed-rank test's.
    out["mde_pct"] = pct((t_ppf(1 - ALPHA / 2, df) + t_ppf(0.8, df)) * sd / math.sqrt(len(d)) / math.sqrt(ARE)) if sd > 0 else None
    lo, hi = signed_rank_ci(nz, exact, np.abs(nzr))
    out.update(ci_low=lo, ci_high=hi)
    return out


def paired_cases():
    rng = np.random.default_rng(20261123)
    base = rng.lognormal(4.6, 0.3, 80)  # round effects shared by both arms
    noise = lambda n, s=0.01: rng.normal(0, s, n)
    cases = [
        paired_case("exact_8", base[:8] * np.exp(noise(8)), base[:8] * 1.01 * np.exp(noise(8)), "exact, B 1% slower"),
        paired_case("exact_20_null", base[:20] * np.exp(noise(20)), base[:20] * np.exp(noise(20))),
        paired_case("exact_50", base[:50] * np.exp(noise(50)), base[:50] * 1.005 * np.exp(noise(50)), "largest exact"),
        paired_case("approx_80", base * np.exp(noise(80)), base * 0.99 * np.exp(noise(80)), "B 1% faster"),
        paired_case("zeros_and_ties", [100, 100, 102, 98, 100, 101, 99, 100, 103, 100, 97, 100],
                    [100, 101, 101, 99, 100, 103, 101, 102, 103, 101, 99, 102], "integers: zeros and tied ratios"),
        paired_case("tiny_3", [10.0, 11.0, 12.0], [10.5, 11.4, 12.9], "smallest p is 0.25"),
    ]
    # More cases for the signed-rank interval: its small-n edge, ties of one
    # sign, a larger normal-approximation sample.
    rng = np.random.default_rng(31337)
    for n in (2, 6, 7, 12, 31):
        a = rng.lognormal(4, 0.2, n)
        cases.append(paired_case(f"ci_exact_{n}", a, a * np.exp(rng.normal(0.004, 0.01, n))))
    a = np.round(rng.lognormal(4, 0.2, 40))
    cases.append(paired_case("ci_ties_40", a, np.round(a * np.exp(rng.normal(0.01, 0.02, 40))), "rounded: ties and zeros"))
    a = rng.lognormal(4, 0.2, 300)
    cases.append(paired_case("ci_approx_300", a, a * np.exp(rng.normal(-0.002, 0.01, 300))))
    return cases


def corrections():
    """Holm and Bonferroni adjusted p-values, written out step by step."""
    out = []
    for ps in ([0.01, 0.04, 0.03, 0.2], [0.001, 0.5, 0.02], [0.05], [0.3, 0.01, 0.01, 0.04, None]):
        defined = [(i, p) for i, p in enumerate(ps) if p is not None]
        m = len(defined)
        bonf = [None] * len(ps)
        holm = [None] * len(ps)
        for i, p in defined:
            bonf[i] = min(1.0, p * m)
        running = 0.0
        for j, (i, p) in enumerate(sorted(defined, key=lambda t: t[1])):
            running = max(running, min(1.0, (m - j) * p))
            holm[i] = running
        out.append({"p": ps, "holm": holm, "bonferroni": bonf})
    return out


def main():
    rng = np.random.default_rng(20261122)
    cases = [
        case("normal_shift", [rng.normal(100, 5, 20), rng.normal(106, 5, 20)], "B 6% slower"),
        case("no_shift", [rng.normal(50, 2, 25), rng.normal(50, 2, 25)]),
        case("ties", [rng.integers(10, 15, 15), rng.integers(11, 16, 12)], "integer data, many ties"),
        case("tiny_exact", [[3.1, 2.7, 3.3, 2.9], [3.6, 3.4, 3.9, 3.2, 4.0]], "exact Mann-Whitney"),
        case("exact_8_8", [rng.normal(10, 1, 8), rng.normal(11, 1, 8)], "largest exact case"),
        case("n9_8_exact", [rng.normal(10, 1, 9), rng.normal(11, 1, 8)], "exact: B has 8 values"),
        case("tiny_2_3", [[1.0, 2.0], [2.5, 3.5, 3.0]]),
        case("unequal_sizes", [rng.lognormal(3, 0.2, 7), rng.lognormal(3.1, 0.2, 40)]),
        case("constant_a", [[7.0] * 10, rng.normal(7.5, 0.3, 10)]),
        case("constant_equal", [[5.0] * 6, [5.0] * 6], "everything undefined but summaries"),
        case("constant_different", [[100.0] * 10, [110.0] * 10], "deterministic metric that changed"),
        case("negative", [rng.normal(-20, 3, 15), rng.normal(-17, 3, 15)]),
        case("large_magnitude", [rng.normal(1, 0.01, 12) * 1e300, rng.normal(1.02, 0.01, 12) * 1e300],
             "near the float64 limit", rescale=True),
        case("small_magnitude", [rng.normal(1, 0.01, 12) * 1e-300, rng.normal(0.98, 0.01, 12) * 1e-300],
             "tiny magnitudes", rescale=True),
        case("one_value", [[4.2], rng.normal(4, 0.1, 10)], "A has one value"),
        case("three_groups", [rng.normal(10, 1, 12), rng.normal(10.5, 1, 12), rng.normal(12, 1, 12)]),
        case("drift", [np.linspace(100, 110, 20) + rng.normal(0, 0.5, 20), rng.normal(105, 1, 20)],
             "A drifts upward"),
        case("skewed_outliers", [np.concatenate([rng.exponential(1, 28), [40, 55]]) + 10,
                                 rng.exponential(1, 30) + 10.8]),
    ]
    print(json.dumps({
        "generator": "analysis/testdata/gen_reference.py",
        "scipy": scipy.__version__, "numpy": np.__version__,
        "confidence": CONF, "alpha": ALPHA, "resamples": RESAMPLES,
        "cases": cases, "corrections": corrections(), "t_ppf": t_ppf_table(),
        "paired": paired_cases(),
    }, indent=1))


if __name__ == "__main__":
    main()
