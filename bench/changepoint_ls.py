#!/usr/bin/python3
"""The least-squares step location (the maximum-likelihood estimate for one
step in Gaussian noise, no outliers) on 4,000 series of 200 points with a
step of 2σ and of 3σ at index 100: the share located within ±1 point. A
bound of sorts for bench/changepoint_study's single-step figure
(docs/history.md). Seeded; run with /usr/bin/python3 (numpy).
"""
import numpy as np

rng = np.random.default_rng(1)
n, at, reps = 200, 100, 4000
t = np.arange(5, n - 4)
for size in (2, 3):
    ok = 0
    for _ in range(reps):
        x = rng.standard_normal(n)
        x[at:] += size
        c = np.cumsum(x)
        left = c[t - 1] / t
        right = (c[-1] - c[t - 1]) / (n - t)
        q = (left - right) ** 2 * t * (n - t) / n
        ok += abs(int(t[np.argmax(q)]) - at) <= 1
    print(f"{size} sigma: {ok / reps:.3f} within ±1")
