# Reference values for analysis.StratifiedWilcoxon (pool_test.go).
# One stratum: scipy.stats.wilcoxon(d, method="approx", correction=False)
# (zero_method="wilcox"). Several strata: van Elteren's weights 1/(n+1) on
# each stratum's centred R+, ranks from scipy.stats.rankdata, tail from
# scipy.stats.norm.sf. Run: python3 stratified_wilcoxon.py
import numpy as np
from scipy import stats

def stratified(strata):
    num = den = 0.0
    for d in strata:
        d = np.asarray(d, float)
        d = d[d != 0]
        n = len(d)
        if n == 0:
            continue
        r = stats.rankdata(np.abs(d))
        rplus = r[d > 0].sum()
        _, t = np.unique(np.abs(d), return_counts=True)
        var = n * (n + 1) * (2 * n + 1) / 24 - ((t ** 3 - t).sum()) / 48
        w = 1 / (n + 1)
        num += w * (rplus - n * (n + 1) / 4)
        den += w * w * var
    z = num / np.sqrt(den)
    return z, 2 * stats.norm.sf(abs(z))

cases = [
    [[0.01, -0.02, 0.03, 0.05, -0.01, 0.04, 0.02, 0.06]],
    [[0.01, 0.01, -0.02, 0.0, 0.03, 0.03, 0.05]],
    [[0.01, -0.02, 0.03, 0.05], [0.02, 0.04, -0.01, 0.03, 0.07, 0.01], [-0.03, 0.01, 0.02]],
    [[0.1, 0.2, 0.1, -0.05, 0.3], [0.0, 0.01, -0.01, 0.02, 0.02, 0.03, -0.02, 0.01, 0.04]],
]
for c in cases:
    z, p = stratified(c)
    if len(c) == 1:
        res = stats.wilcoxon(c[0], method="approx", correction=False)
        assert abs(res.pvalue - p) < 1e-12, (res.pvalue, p)
    print(repr(c), "%.17g %.17g" % (z, p))
