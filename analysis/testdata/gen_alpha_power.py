#!/usr/bin/python3
"""Reference values of analysis.AlphaPower and ExperimentsToJudgeAlpha
(TestAlphaPowerReference in alpha_test.go), from scipy.stats.binom:

power(k) = binom.sf(x* - 1, k, 2·alpha) with x* the smallest x for which
binom.sf(x - 1, k, alpha) < (1 - confidence)/2 (the Clopper–Pearson
interval of x of k lies above alpha); conservative(k) = binom.pmf(0, k,
alpha) < (1 - confidence)/2; need = smallest K with power ≥ 0.8 (and
conservative) for every K' ≥ K up to 3·K.
Run: python3 analysis/testdata/gen_alpha_power.py
"""
from scipy.stats import binom


def power(k, alpha, conf):
    tail = (1 - conf) / 2
    x = 0
    while binom.sf(x - 1, k, alpha) >= tail:
        x += 1
    return binom.sf(x - 1, k, 2 * alpha), binom.pmf(0, k, alpha) < tail


def need(alpha, conf, inflated_only):
    last_bad = 0
    k = 1
    limit = None
    while limit is None or k <= limit:
        p, c = power(k, alpha, conf)
        if p < 0.8 or (not inflated_only and not c):
            last_bad = k
        elif limit is None:
            limit = 3 * k
        k += 1
    return last_bad + 1


for alpha in (0.05, 0.01, 0.1):
    for k in (20, 72, 73, 200, 234):
        p, c = power(k, alpha, 0.95)
        print(f"{{{k}, {alpha}, 0.95, {p:.12g}, {str(c).lower()}}},")
for alpha, conf in ((0.05, 0.95), (0.01, 0.95), (0.1, 0.95), (0.05, 0.99)):
    print(f"{{{alpha}, {conf}, {need(alpha, conf, False)}, {need(alpha, conf, True)}}},")
