#!/usr/bin/python3
"""Generate repeatedp_reference.json: repeated p-values of the
group-sequential design for analysis/groupseq_reference_test.go
(gsDesign.repeatedP).

Run from the repository root with Debian's python3-scipy (about a minute):

    /usr/bin/python3 analysis/testdata/gen_repeatedp_reference.py > analysis/testdata/repeatedp_reference.json

The repeated p-value (Jennison & Turnbull 2000, "Group Sequential Methods
with Applications to Clinical Trials", section 9.1) of looks k = 2..K with
nominal two-sided p-values obs[k] is the smallest level a at which the
design of level a (Lan-DeMets O'Brien-Fleming-type spending, a look every
round, cap K) rejects at one of the looks: obs[k] <= 2 (1 - Phi(z_k(a))).
The boundaries z_k(a) come from gen_groupseq_reference.boundaries (the
independent trapezoid-rule recursion with scipy.optimize.brentq, whose
boundaries that script checks by Monte Carlo); the smallest a is found by
bisection on log a to 1e-7, between 1e-9 and 1 (the range the Go code
reports; outside it "p" is the end). Cases: single informative looks
early, mid and late, two looks, and whole paths of a seeded random walk.
"""
import json
import math
import os
import sys

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_groupseq_reference import boundaries  # noqa: E402

H = 0.04  # the trapezoid grid; halving it moved p by < 6.1e-5 relative (three cases, checked by hand)


def rejects(a, K, obs):
    last = max(k for k in range(2, len(obs)) if obs[k] < 1)
    z = boundaries(a, K, h=H, last=min(last, K))
    return any(obs[k] <= 2 * stats.norm.sf(z[k]) for k in z)


def repeated_p(K, obs):
    if not any(p < 1 for p in obs[2:]) or not rejects(1.0, K, obs):
        return 1.0
    if rejects(1e-9, K, obs):
        return 1e-9
    lo, hi = math.log(1e-9), 0.0
    while hi - lo > 1e-7:
        mid = (lo + hi) / 2
        if rejects(math.exp(mid), K, obs):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def looks(K, at):
    obs = [1.0] * (K + 1)
    for k, p in at.items():
        obs[k] = p
    return obs


def walk(K, drift, seed):
    rng = np.random.default_rng(seed)
    s = np.cumsum(rng.normal(drift, 1, K + 1))
    return [1.0, 1.0] + [float(2 * stats.norm.sf(abs(s[k - 1]) / math.sqrt(k))) for k in range(2, K + 1)]


def main():
    cases = [
        (10, looks(10, {5: 0.01})),
        (30, looks(30, {20: 1e-3})),
        (30, looks(30, {3: 1e-5})),
        (30, looks(30, {30: 0.04})),
        (20, looks(20, {8: 0.004, 15: 0.01})),
        (20, looks(20, {10: 0.3})),
        (40, walk(40, 0.35, 1)),
        (40, walk(40, 0.15, 2)),
        (25, walk(25, 0.8, 3)),
    ]
    out = []
    for K, obs in cases:
        p = repeated_p(K, obs)
        print(f"K {K}: p {p:.6g}", file=sys.stderr)
        out.append({"max_rounds": K, "obs": obs, "p": p})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
