#!/usr/bin/python3
"""Generate weighted_bh.json: weighted Benjamini–Hochberg adjusted p-values
for analysis/weighted_test.go (issue 34), independently of the Go code.

Run from the repository root with Debian's numpy 1.24.2:

    /usr/bin/python3 analysis/testdata/gen_weighted_bh.py > analysis/testdata/weighted_bh.json

The procedure (Genovese, Roeder & Wasserman 2006, "False discovery control
with p-value weighting", Biometrika 93: 509-524), with each test's level
capped at alpha: weights w rescaled to average 1 over the k defined
p-values; at level alpha the step-up rejects, for the largest r with
#{j : p_j <= alpha * min(1, w_j r / k)} >= r, every j with
p_j <= alpha * min(1, w_j r / k).

The Go code computes the adjusted p (the smallest alpha rejecting i) in
closed form; here it is found by brute force instead: every alpha at which
the rejections can change is a value p_j / min(1, w_j r / k) for some j
and r, so the procedure is run at each such candidate, in increasing
order, and adj_i is the first candidate that rejects i (1 when none below
1 does). Each case also records the uncapped weighted BH of the paper
computed as BH on p/w with numpy (the running minimum from the largest
down of k/j times the j-th smallest p_j/w_j): where no test's w_i R/k
passes 1 the two agree, and with all weights 1 both are BH (R's
p.adjust(p, "BH")).
"""
import json
import sys

import numpy as np


def rejects(p, w, alpha):
    k = len(p)
    best = 0
    for r in range(1, k + 1):
        c = np.minimum(1.0, w * r / k)
        if np.sum(p <= alpha * c) >= r:
            best = r
    if best == 0:
        return np.zeros(k, dtype=bool)
    c = np.minimum(1.0, w * best / k)
    return p <= alpha * c


def brute(p, w):
    k = len(p)
    w = w * k / w.sum()
    cands = set()
    for r in range(1, k + 1):
        c = np.minimum(1.0, w * r / k)
        with np.errstate(divide="ignore"):
            for x in np.where(c > 0, p / c, np.inf):
                if x <= 1:
                    cands.add(float(x))
    cands.add(1.0)
    adj = np.ones(k)
    done = np.zeros(k, dtype=bool)
    for a in sorted(cands):
        rej = rejects(p, w, a * (1 + 1e-13))  # the candidate itself, not its rounding
        new = rej & ~done
        adj[new] = a
        done |= rej
    return adj


def uncapped(p, w):
    k = len(p)
    w = w * k / w.sum()
    with np.errstate(divide="ignore"):
        q = np.where(w > 0, p / w, np.inf)
    order = np.argsort(q, kind="stable")
    adj = np.empty(k)
    run = np.inf
    for j in range(k - 1, -1, -1):
        i = order[j]
        run = min(run, q[i] * k / (j + 1))
        adj[i] = min(1.0, run)
    return adj


def main():
    rng = np.random.default_rng(34)
    cases = []
    # R's p.adjust example for BH, all weights 1.
    cases.append(("bh, equal weights", [0.01, 0.04, 0.03, 0.005, 0.5], [1, 1, 1, 1, 1]))
    # A profile-like family: shares of a Zipf tail and a few hot ones.
    for n, name in [(8, "small"), (30, "profile-like"), (110, "profile-sized")]:
        share = 1 / (np.arange(n) + 4.0) ** 1.1
        share[: min(4, n)] *= 8
        p = rng.uniform(size=n)
        nonnull = rng.choice(n, size=max(1, n // 10), replace=False)
        p[nonnull] = rng.uniform(0, 0.002, size=len(nonnull))
        cases.append((name, p.tolist(), share.tolist()))
    # Heavy weights where the cap binds, a zero weight, ties.
    cases.append(("cap binds", [0.001, 0.002, 0.003, 0.04, 0.06, 0.3, 0.5, 0.9],
                  [6, 1, 0.5, 0.1, 0.1, 0.1, 0.1, 0.1]))
    cases.append(("zero weight and ties", [0.001, 0.001, 0.02, 0.02, 0.5], [0, 1, 1, 2, 1]))
    out = []
    for name, p, w in cases:
        p, w = np.array(p, dtype=float), np.array(w, dtype=float)
        out.append({"name": name, "p": p.tolist(), "w": w.tolist(),
                    "adjusted": brute(p, w).tolist(), "uncapped": uncapped(p, w).tolist()})
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
