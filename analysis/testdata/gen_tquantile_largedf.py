#!/usr/bin/python3
"""Reference for TestStudentTQuantileLargeDF (tquantile_largedf_test.go):
scipy.stats.t.isf(q, df) past the 10^7 df where perflab's t quantile
switches to the Cornish-Fisher expansion. Prints Go table rows."""
from scipy import stats

for df in [1e8, 1e10, 1e12, 1e16, 1e20]:
    for q in [0.025, 1e-6, 1e-30, 1e-99]:
        print(f"\t{{{df!r}, {q!r}, {stats.t.isf(q, df)!r}}},")
