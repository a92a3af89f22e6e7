#!/usr/bin/python3
"""Generate reference.json: fixed series with known steps and SciPy's Welch
t-test p of the segments on either side of each step, for
analysis/changepoint/changepoint_test.go.

The series are drawn with numpy (seeded); the steps are placed by
construction and large enough that the detector must find exactly them.
p is scipy.stats.ttest_ind(before, after, equal_var=False).pvalue, where
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
        out.append({"index": at, "before": float(a.mean()), "after": float(b.mean()),
                    "p": float(stats.ttest_ind(a, b, equal_var=False).pvalue)})
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
print(json.dumps({"scipy": scipy.__version__, "cases": cases}, indent=1))
