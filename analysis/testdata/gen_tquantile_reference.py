#!/usr/bin/python3
"""Generate tquantile_reference.json: Student's t upper-tail quantiles for
analysis/groupseq_reference_test.go (studentTTailQuantile).

Run from the repository root with Debian's python3-scipy:

    /usr/bin/python3 analysis/testdata/gen_tquantile_reference.py > analysis/testdata/tquantile_reference.json

For each (q, df), "x" solves P(T > x) = q. It starts from scipy.stats.t.isf
and takes Newton steps on log scipy.stats.t.sf against log x (on t.sf
itself for q >= 0.5, where x <= 0): scipy 1.10's isf/ppf (cephes stdtrit)
is off by up to ~1e-8 relative from its own accurate sf, so the raw isf is
kept beside it ("scipy_isf") but is not the reference. Independent
forms check the refined values (asserted here, to 1e-13 relative): the
closed forms for df = 1 (Cauchy) x = cot(pi q) and df = 2
x = (1 - 2q)/sqrt(2q(1 - q)), and for df >= 10^4 the Cornish-Fisher
expansion about the normal quantile (Abramowitz & Stegun 26.7.5) to
df^-4, where its last term is below 1e-15 x.
"""
import json
import math
import sys

from scipy import stats

QS = (0.975, 0.9, 0.6, 0.5, 0.49, 0.4, 0.25, 0.1, 0.025, 1e-3, 1e-4, 1e-5, 2e-6, 1.01e-6, 1e-6, 9.9e-7,
      1e-8, 1e-10, 1e-13, 1e-16, 1e-20, 1e-30, 1e-50, 1e-80, 1e-99)
DFS = (1, 2, 3, 3.5, 4, 7, 10, 29, 100, 999, 1e4, 1e5, 100001, 3e5, 1e6, 3e6, 1e7)


def tail_quantile(q, df):
    x = float(stats.t.isf(q, df))
    if q == 0.5:
        return 0.0
    for _ in range(8):
        if x > 0:
            # y = log x; f(y) = log sf(x) - log q; f'(y) = -x pdf(x)/sf(x)
            f = float(stats.t.logsf(x, df)) - math.log(q)
            d = -x * float(stats.t.pdf(x, df)) / float(stats.t.sf(x, df))
            x *= math.exp(-f / d)
        else:
            x += (float(stats.t.sf(x, df)) - q) / float(stats.t.pdf(x, df))
    return x


def closed_form(q, df):
    if df >= 1e4:
        z = float(stats.norm.isf(q))
        g = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96, (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
             (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160)
        if abs(g[3]) / df**4 > 1e-15 * abs(z):
            return None
        return z + sum(gi / df**(i + 1) for i, gi in enumerate(g))
    if df == 1:
        return 1 / math.tan(math.pi * q)
    if df == 2:
        return (1 - 2 * q) / math.sqrt(2 * q * (1 - q))
    return None


def main():
    out = []
    worst = 0.0
    for df in DFS:
        for q in QS:
            x = tail_quantile(q, df)
            c = closed_form(q, df)
            if c is not None and q != 0.5:
                err = abs(x - c) / abs(c)
                worst = max(worst, err)
                assert err < 1e-13, (q, df, x, c)
            out.append({"q": q, "df": df, "x": x, "scipy_isf": float(stats.t.isf(q, df))})
    print(f"{len(out)} cases; worst disagreement with the independent forms: {worst:.2g} relative", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
