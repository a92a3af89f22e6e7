#!/usr/bin/python3
"""Reference values for TrimmedLocation (trimmed_reference_test.go): the
trimmed mean (scipy.stats.trim_mean), its standard error from the
Winsorized standard deviation (scipy.stats.mstats.trimmed_stde, Tukey &
McLaughlin 1963) and the one-sample trimmed t-test's two-sided p with
h - 1 degrees of freedom (scipy.stats.t.sf), on seeded heavy-tailed
samples. Run with Debian's python3-scipy:
    /usr/bin/python3 gen_trimmed_reference.py > trimmed_reference.json
"""
import json

import numpy as np
from scipy import stats
from scipy.stats import mstats

rng = np.random.default_rng(20261129)
cases = []
for n in (2, 3, 4, 5, 7, 10, 13, 20, 29, 40):
    for trim in (0.1, 0.2, 0.25):
        # log ratios of a few per cent with a heavy tail (Student t, 2 df)
        x = 0.01 + 0.05 * rng.standard_t(2, size=n)
        g = int(trim * n)
        h = n - 2 * g
        est = stats.trim_mean(x, trim)
        se = float(mstats.trimmed_stde(x, limits=(trim, trim), inclusive=(True, True)))
        p = float(2 * stats.t.sf(abs(est) / se, h - 1)) if h >= 2 else None
        cases.append({"x": x.tolist(), "trim": trim, "est": est, "se": se, "df": h - 1, "p": p})
json.dump(cases, __import__("sys").stdout, indent=1)
