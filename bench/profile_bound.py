#!/usr/bin/python3
"""profile_bound.py: what per-function testing can find, from the noise.

Reads `perflab profile --json SESSION` of a profiled session and, for each
tested function, models a round's log ratio of its time as the sampling
noise of its count (Poisson: variance 1/n for n samples a trial) plus the
run-to-run variation of its own work (--jitter, 1% on the simulated
phone), in both builds: sd = sqrt(2·(1/n + jitter²)). It checks the model
against the session's own intervals (the sd each function's interval
implies), then gives, for a change of --effect % in one function at 20,
40 and 80 rounds, the normal-approximation power of its test:

  - oracle: the function tested alone at alpha (what a method that knew
    where to look would find);
  - share: perflab's weighting, Benjamini–Hochberg weighted by share,
    which with one changed function is its Bonferroni level alpha·share;
  - R-W: the weights of Roeder & Wasserman (2009, "Genome-wide
    significance levels and weighted hypothesis testing", Statist. Sci.
    24: 398-413, eq. 4) that maximise the expected power when the change
    lies in a function with probability equal to its share, designed for
    --effect (and, for their sensitivity, for other effects);

and the sum of levels a procedure deciding each function on its own
evidence would need to give every function of 1-5% of the time a power
within 10 points of the oracle's (issue 34), against the alpha it has.

  sh bench/profile_bound.sh            # runs a session and this script
  /usr/bin/python3 bench/profile_bound.py PROFILE.json [--effect 3] [--alpha 0.05]
"""
import argparse
import json
import math
import sys

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom, norm


def load(path):
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"profile_bound: {path}: {e}")
    every = rep.get("functions", [])
    fns = [f for f in every if f.get("tested")]
    if not fns or not rep.get("pairs"):
        sys.exit(f"profile_bound: {path}: no tested function or no pairs (is it perflab profile --json output?)")
    launch = sum((f["a_ms"] + f["b_ms"]) / 2 for f in every)
    return rep, fns, launch


def power(xi, level):
    """Two-sided z test's power at noncentrality xi (one direction)."""
    return norm.sf(norm.isf(level / 2) - xi)


def rw_levels(xi, prior, alpha):
    """Roeder & Wasserman's optimal levels for noncentralities xi and
    prior weights: level_i = 2·Φ̄(xi/2 + (c − log prior_i)/xi), c such
    that they sum to alpha (the two-sided form of their eq. 4)."""
    def levels(c):
        return 2 * norm.sf(xi / 2 + (c - np.log(prior)) / xi)
    c = brentq(lambda c: levels(c).sum() - alpha, -1e3, 1e3)
    return levels(c)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("profile", help="perflab profile --json output")
    ap.add_argument("--effect", type=float, default=3, help="the change in one function, %% of its time")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--jitter", type=float, default=0.01, help="run-to-run sd of a function's own work (sim: 0.01)")
    a = ap.parse_args()
    rep, fns, launch = load(a.profile)
    pairs = rep["pairs"]
    names = [f["name"] for f in fns]
    n = np.array([(f["samples_a"] + f["samples_b"]) / 2 / pairs for f in fns])
    ms = np.array([(f["a_ms"] + f["b_ms"]) / 2 for f in fns])
    share = ms / ms.sum()  # of the tested time: the weights
    of_launch = ms / launch  # of all the time, rare functions included: the classes
    sd = np.sqrt(2 * (1 / n + a.jitter ** 2))
    order = np.argsort(-share)

    print(f"{a.profile}: {len(fns)} tested functions, {pairs} rounds, alpha {a.alpha}, a +{a.effect:g}% change")
    print("\nThe model against the session: a round's log-ratio sd, modelled and as the interval implies")
    print(f"{'function':32} {'of launch':>9} {'samples/trial':>13} {'model':>7} {'interval':>8}")
    for i in order[:8]:
        f = fns[i]
        lo, hi, lvl = f["ci_low_pct"], f["ci_high_pct"], f["ci_level"]
        implied = float("nan")
        if lo is not None and hi is not None and lvl:
            width = math.log(1 + hi / 100) - math.log(1 + lo / 100)
            implied = width / (2 * norm.isf((1 - lvl) / 2)) * math.sqrt(pairs)
        print(f"{names[i]:32} {of_launch[i]*100:8.1f}% {n[i]:13.0f} {sd[i]:7.4f} {implied:8.4f}")

    delta = math.log(1 + a.effect / 100)
    for rounds in (20, 40, 80):
        xi = delta / (sd / math.sqrt(rounds))
        lv = {"oracle": np.full_like(xi, a.alpha), "share": a.alpha * share, "R-W": rw_levels(xi, share, a.alpha)}
        pw = {k: power(xi, v) for k, v in lv.items()}
        print(f"\n{rounds} rounds: power (level) by method; P(≥9 of 10 seeds) at the share weighting's power")
        print(f"{'function':32} {'of launch':>9} {'oracle':>7} {'share':>16} {'R-W':>16} {'≥9/10':>6}")
        for i in order[:10]:
            print(f"{names[i]:32} {of_launch[i]*100:8.1f}% {pw['oracle'][i]:7.2f} "
                  f"{pw['share'][i]:6.2f} ({lv['share'][i]:.4f}) {pw['R-W'][i]:6.2f} ({lv['R-W'][i]:.4f}) "
                  f"{binom.sf(8, 10, pw['share'][i]):6.2f}")
        print(f"expected power with the change in a function drawn by share: oracle {np.dot(share, pw['oracle']):.3f}, "
              f"share {np.dot(share, pw['share']):.3f}, R-W {np.dot(share, pw['R-W']):.3f}")
        # The levels a per-function procedure needs: 90% power for every
        # function of at least 5% of the time, and within 10 points of
        # the oracle for every one of 1-5%.
        need = np.zeros_like(xi)
        for i in range(len(xi)):
            target = 0.9 if of_launch[i] >= 0.05 else (pw["oracle"][i] - 0.10 if of_launch[i] >= 0.01 else 0)
            if target <= 0:
                continue
            # power Φ̄(z − ξ) = target at the critical value z = ξ + Φ̄⁻¹(target)
            need[i] = 2 * norm.sf(xi[i] + norm.isf(target))
        big, mid = of_launch >= 0.05, (of_launch >= 0.01) & (of_launch < 0.05)
        print(f"levels needed: 90% power for the {big.sum()} functions of ≥5%: {need[big].sum():.4f}; "
              f"within 10 points of the oracle for the {mid.sum()} of 1-5%: {need[mid].sum():.4f}; "
              f"together {need.sum():.4f} against alpha {a.alpha}")
        if rounds == 40:
            print("R-W's sensitivity to its design effect (true change +%g%%): power of the functions of ≥5%% of the launch" % a.effect)
            for design in (1.5, 2, 3, 5, 10):
                xd = xi * math.log(1 + design / 100) / delta
                p = power(xi, rw_levels(xd, share, a.alpha))
                print(f"  designed for {design:4g}%: " + ", ".join(f"{names[i]} {p[i]:.2f}" for i in order if of_launch[i] >= 0.05))


if __name__ == "__main__":
    main()
