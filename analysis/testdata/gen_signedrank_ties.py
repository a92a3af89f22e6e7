#!/usr/bin/python3
"""Generate signedrank_ties.json: signed-rank tests of tied log ratios for
analysis/signedrank_ties_test.go.

Issue 25 item 4. Run from the repository root with Debian's python3-scipy
1.10.1 / numpy 1.24.2 (`apt-get install -y python3-scipy`):

    /usr/bin/python3 analysis/testdata/gen_signedrank_ties.py > analysis/testdata/signedrank_ties.json

It makes 40 paired cases (A, B as the floats perflab reads) whose log
ratios log(B/A) tie in exact arithmetic but not always in floating point:
values from a small set, so that ratios repeat; mirrored pairs (A, B) and
(B, A), whose float log ratios differ in the last bits; the same ratio at
other magnitudes and from decimal values (36.9/12.3 is 3 exactly, the
floats' quotient need not be); zeros, both B = A and B one ulp from A.

SciPy is given the data rounded as perflab documents its tolerance
(analysis/paired.go, signedRank): each pair's ratio is taken exactly from
the two floats (fractions.Fraction), folded to c = max(B/A, A/B) (so that
mirrored pairs share c), and c is rounded to 12 significant digits;
d = ±log(c), 0 when c rounds to 1 (rounded_log_ratios, also used by
gen_reference.py). It asserts that ratios rounding alike are within 1e-14
of each other and ratios rounding apart more than 1e-8 apart, so the tie
classes are perflab's and do not depend on where the rounding falls.

Each case records scipy.stats.wilcoxon(d, zero_method="wilcox",
correction=False) with the method perflab uses: exact when at most 50
differences are non-zero, none are zero and none are tied, else "approx"
(the normal approximation with the tie correction of the variance). SciPy's
default method="auto" would take "exact" for ≤ 50 differences even with
ties (scipy/stats/_morestats.py), which perflab does not. Each case also
records the tie term Σ(t³ − t) over groups of t tied non-zero |d|, of the
rounded data ("tie_term") and of the raw float |log(B/A)| ("raw_tie_term",
smaller where float noise split ties), and the zeros of each.
"""
import json
import math
import sys
import warnings
from decimal import ROUND_HALF_EVEN, Decimal, getcontext
from fractions import Fraction

import numpy as np
import scipy
from scipy import stats

SIG = 12  # significant digits of the folded ratio SciPy sees
getcontext().prec = 60


def folded(a, b):
    """max(B/A, A/B) exactly, and the sign of log(B/A)."""
    r = Fraction(b) / Fraction(a)
    if r >= 1:
        return r, 1
    return 1 / r, -1


def round_sig(c):
    """c (a Fraction ≥ 1) rounded to SIG significant digits, as a Decimal."""
    x = Decimal(c.numerator) / Decimal(c.denominator)
    return x.quantize(Decimal(1).scaleb(x.adjusted() - SIG + 1), rounding=ROUND_HALF_EVEN)


def rounded_log_ratios(a, b):
    """log(B/A) of each pair as SciPy is given it: ±log(c) with c = max(B/A,
    A/B) exact and rounded to SIG digits, 0 when c rounds to 1. Asserts that
    ratios rounding alike are within 1e-14 of each other (float noise is
    ~1e-16) and ratios rounding apart more than 1e-8 apart (perflab's
    tolerance is 1e-9 of |log c| + 1e-12), so the tie classes are the same
    for both and do not depend on where the rounding falls."""
    out, keys = [], []
    for x, y in zip(a, b):
        c, s = folded(x, y)
        r = round_sig(c)
        keys.append((c, r))
        out.append(0.0 if r == 1 else s * math.log(float(r)))
    keys.sort()
    for (c0, r0), (c1, r1) in zip(keys, keys[1:]):
        if r0 == r1:
            assert c1 - c0 <= c1 * Fraction(1, 10**14), (c0, c1)
        else:
            assert c1 - c0 > c1 * Fraction(1, 10**8), (c0, c1)
    return np.asarray(out)


def tie_term(vals):
    """Σ (t³ − t) over groups of t equal values."""
    _, counts = np.unique(np.asarray(vals), return_counts=True)
    return int(np.sum(counts**3 - counts))


def perflab_method(d):
    nz = d[d != 0]
    if len(nz) <= 50 and len(nz) == len(d) and tie_term(np.abs(nz)) == 0:
        return "exact"
    return "approx"


def case(name, a, b):
    a = [float(x) for x in a]
    b = [float(x) for x in b]
    d = rounded_log_ratios(a, b)
    raw = np.log(np.asarray(b) / np.asarray(a))
    nz = d != 0
    method = perflab_method(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.wilcoxon(d, zero_method="wilcox", correction=False, method=method)
    return {
        "name": name, "a": a, "b": b,
        "n": len(a), "zeros": int(np.sum(~nz)),
        "tie_term": tie_term(np.abs(d[nz])),
        "raw_tie_term": tie_term(np.abs(raw[raw != 0])),
        "raw_zeros": int(np.sum(raw == 0)),
        "method": method, "exact": method == "exact",
        "statistic": float(res.statistic), "p": float(res.pvalue),
    }


def ulp_up(x):
    return float(np.nextafter(x, math.inf))


def main():
    rng = np.random.default_rng(25004)
    cases = []

    def pick(vals, n, p_equal=0.0):
        """n pairs of values from vals; a pair is (v, v) with p_equal."""
        out = []
        for _ in range(n):
            i = rng.integers(len(vals))
            j = i if rng.random() < p_equal else rng.choice([k for k in range(len(vals)) if k != i])
            out.append((vals[i], vals[j]))
        return out

    def add(name, pairs):
        a, b = zip(*pairs)
        cases.append(case(name, a, b))

    # 1. Mirrored pairs from a few integer timings, with and without a shift.
    for k, n in enumerate((8, 12, 20, 30, 45, 60, 90, 140)):
        vals = [97.0, 100.0, 103.0, 106.0][: 3 + k % 2]
        pairs = pick(vals, n)
        if k % 3 == 2:  # shift: more pairs where B > A
            pairs = [(x, y) if y >= x or rng.random() < 0.4 else (y, x) for x, y in pairs]
        add(f"mirrored_{n}", pairs)

    # 2. The same ratios at other magnitudes (100/103, 200/206, 1000/1030,
    # 0.5/0.515) mixed with their mirrors.
    for k, n in enumerate((10, 16, 25, 40, 55, 80, 120)):
        base = [(100.0, 103.0), (100.0, 97.0), (50.0, 51.0), (10.0, 11.0)][: 2 + k % 3]
        scales = [1.0, 2.0, 10.0, 0.5, 0.01, 3.0]
        pairs = []
        for _ in range(n):
            x, y = base[rng.integers(len(base))]
            s = scales[rng.integers(len(scales))]
            x, y = x * s, y * s
            pairs.append((x, y) if rng.random() < 0.5 + 0.05 * k else (y, x))
        add(f"scaled_{n}", pairs)

    # 3. Decimal values (one decimal, as a timer in 0.1 ms), whose floats
    # are not exact multiples: 12.3, 24.6, 36.9, ... and 12.9, 25.8, 38.7.
    for k, n in enumerate((9, 14, 22, 35, 50, 51, 75, 110)):
        units = ["12.3", "12.9", "13.1"][: 2 + k % 2]
        pairs = []
        for _ in range(n):
            i, j = rng.choice(len(units), 2, replace=False)
            m = int(rng.integers(1, 8))
            x = float(Decimal(units[i]) * m)
            y = float(Decimal(units[j]) * m)
            pairs.append((x, y) if rng.random() < 0.55 else (y, x))
        add(f"decimal_{n}", pairs)

    # 4. Zeros: B = A exactly and B one ulp above A (float noise of a
    # value computed two ways), among mirrored pairs.
    for k, n in enumerate((10, 18, 26, 40, 58, 70, 100, 130)):
        vals = [9.9, 10.0, 10.1, 10.2][: 3 + k % 2]
        pairs = pick(vals, n, p_equal=0.15 + 0.02 * k)
        for i in range(0, n, 7):  # some noise zeros
            x = pairs[i][0]
            pairs[i] = (x, ulp_up(x)) if i % 2 == 0 else (ulp_up(x), x)
        add(f"zeros_{n}", pairs)

    # 5. Realistic ms timings on a 0.1 grid from a small range, with a
    # shift in half of them: many ratio ties, mirrored and repeated.
    for k, n in enumerate((11, 24, 33, 48, 64, 85, 150, 200, 240)):
        grid = [round(20.0 + 0.1 * i, 1) for i in range(4 + k % 3)]
        shift = 1 if k % 2 else 0
        pairs = []
        for _ in range(n):
            i = int(rng.integers(len(grid)))
            j = int(min(len(grid) - 1, max(0, i + rng.integers(-1, 2) + (shift if rng.random() < 0.3 else 0))))
            pairs.append((grid[i], grid[j]))
        if all(x == y for x, y in pairs):
            pairs[0] = (grid[0], grid[1])
        add(f"grid_{n}", pairs)

    assert len(cases) == 40, len(cases)
    for c in cases:
        assert c["tie_term"] > 0, c["name"]  # every case has ties
    json.dump({"generator": "gen_signedrank_ties.py", "scipy": scipy.__version__, "numpy": np.__version__,
               "significant_digits": SIG, "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
