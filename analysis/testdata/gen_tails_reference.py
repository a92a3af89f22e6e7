#!/usr/bin/python3
"""Generate tails_reference.json: far-tail p-values for analysis/tails_test.go.

Issue 16 items 7 and 8. The values are computed independently of perflab
with Debian's python3-scipy (1.10.1). Regenerate from the repository root:

    /usr/bin/python3 analysis/testdata/gen_tails_reference.py > analysis/testdata/tails_reference.json

- "norm_sf", "t_sf", "chi2_sf": scipy.stats.norm.sf, t.sf and chi2.sf far
  into the tail (where 1 - cdf rounds to 0), and t.sf near t = 0 for
  df = 1, 3, 30 (where df/(df+t^2) is close to 1);
- "tests": two-sample data sets whose test statistics sit far in the tail:
  scipy.stats.mannwhitneyu (method="asymptotic", use_continuity=True),
  ttest_ind(equal_var=False), kruskal, spearmanr against position, and
  wilcoxon of log(b/a) (method="approx", correction=False; more than 50
  pairs, where perflab uses the approximation too);
- "mwu_exact": scipy.stats.mannwhitneyu with method="auto" (exact when
  either sample has at most 8 values and there are no ties, else
  asymptotic: scipy/stats/_mannwhitneyu.py, _mwu_choose_method) and, for
  the exact ones, the exact p.
"""
import json
import math

import numpy as np
import scipy
from scipy import stats


def num(x):
    x = float(x)
    return None if (math.isnan(x) or math.isinf(x)) else x


def tests_case(name, a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    mwu = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True)
    w = stats.ttest_ind(a, b, equal_var=False)
    k = stats.kruskal(a, b)
    sa = stats.spearmanr(a, np.arange(len(a)))
    out = {"name": name, "a": list(map(float, a)), "b": list(map(float, b)),
           "mwu_p_asymptotic": num(mwu.pvalue), "welch_p": num(w.pvalue), "kruskal_p": num(k.pvalue),
           "spearman_a_p": num(sa.pvalue)}
    if len(a) == len(b) and len(a) > 50:  # exact below: see gen_reference.py
        d = np.log(b / a)
        out["wilcoxon_p"] = num(stats.wilcoxon(d, correction=False, method="approx").pvalue)
    return out


def tests_cases():
    rng = np.random.default_rng(16007)
    out = []
    for n in (30, 60, 120, 250, 500):
        # Complete separation with some noise inside each arm; A trends
        # upward so Spearman's p is tiny too.
        a = 100 + np.linspace(0, 3, n) + rng.normal(0, 0.5, n)
        e = rng.normal(0, 1, n)
        b = a.max() + 1 + e - e.min()
        out.append(tests_case(f"separated_{n}", a, b))
    # Ties across the arms (integer data), still far apart.
    a = rng.integers(100, 110, 200).astype(float)
    b = rng.integers(108, 118, 200).astype(float)
    out.append(tests_case("ties_200", a, b))
    return out


def mwu_exact_cases():
    rng = np.random.default_rng(16008)
    out = []
    sizes = [(8, 9), (9, 8), (8, 8), (9, 9), (3, 20), (20, 3), (8, 50), (1, 30), (5, 200), (2, 2)]
    for na, nb in sizes:
        for shift in (0.0, 0.8, 3.0):
            a = rng.normal(10, 1, na)
            b = rng.normal(10 + shift, 1, nb)
            r = stats.mannwhitneyu(a, b, alternative="two-sided")  # method="auto"
            exact = (na <= 8 or nb <= 8)
            out.append({"name": f"{na}v{nb}_shift{shift}", "a": list(map(float, a)), "b": list(map(float, b)),
                        "u": num(r.statistic), "p": num(r.pvalue), "exact": exact})
    # The issue's example: 8 against 9 values.
    a = [1.2, 3.4, 2.2, 5.1, 4.4, 0.3, 2.9, 3.3]
    b = [2.5, 4.1, 5.5, 3.9, 6.2, 4.8, 1.7, 5.9, 3.6]
    r = stats.mannwhitneyu(a, b, alternative="two-sided")
    out.append({"name": "issue_8v9", "a": a, "b": b, "u": num(r.statistic), "p": num(r.pvalue), "exact": True})
    # Ties make auto asymptotic even with few values.
    a = [1.0, 2.0, 2.0, 3.0, 4.0]
    b = [2.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0]
    r = stats.mannwhitneyu(a, b, alternative="two-sided")
    out.append({"name": "ties_5v10", "a": a, "b": b, "u": num(r.statistic), "p": num(r.pvalue), "exact": False})
    return out


def main():
    zs = [0.1, 1, 1.96, 3, 5, 7, 8, 8.3, 8.5, 10, 12, 15, 20, 25, 30, 35, 37]
    ts = [(t, df) for df in (1, 2.5, 5, 10, 30, 100, 1000) for t in (0.5, 2, 5, 10, 30, 100, 1e3, 1e5)]
    # Near t = 0, where df/(df+t²) is close to 1 and 1 − that cancels.
    ts += [(t, df) for df in (1, 3, 30) for t in (1e-12, 1e-8, 1e-4, 0.01, 0.1, -0.01)]
    chis = [(x, k) for k in (1, 2, 5) for x in (0.5, 5, 50, 100, 300, 1000)]
    print(json.dumps({
        "generator": "analysis/testdata/gen_tails_reference.py",
        "scipy": scipy.__version__, "numpy": np.__version__,
        "norm_sf": [{"z": z, "sf": float(stats.norm.sf(z))} for z in zs],
        "t_sf": [{"t": t, "df": df, "sf": float(stats.t.sf(t, df))} for t, df in ts],
        "chi2_sf": [{"x": x, "k": k, "sf": float(stats.chi2.sf(x, k))} for x, k in chis],
        "tests": tests_cases(),
        "mwu_exact": mwu_exact_cases(),
    }, indent=1))


if __name__ == "__main__":
    main()
