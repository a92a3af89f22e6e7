#!/usr/bin/python3
"""Compare perflab's bootstrap CI of median(B) - median(A) with
scipy.stats.bootstrap on the same data: n = 1,000 per arm, 10,000
resamples, percentile method, 95% confidence.

Run it (needs Go and python3-scipy) from anywhere:

    /usr/bin/python3 bench/bootstrap_vs_scipy.py [--n 1000] [--resamples 10000] [--repeat 5]

It prints both intervals (they must agree within Monte Carlo error), the
best and median wall time of each, and the speed-up; it exits 1 if the
intervals disagree or perflab is not at least 20x faster (issue 11: ≥ 20×).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy import stats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--resamples", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    rng = np.random.default_rng(1)
    a = 100 * (1 + 0.05 * rng.standard_normal(args.n))
    b = 102 * (1 + 0.05 * rng.standard_normal(args.n))

    def diff(x, y, axis=-1):
        return np.median(y, axis=axis) - np.median(x, axis=axis)

    sp_times, res = [], None
    for i in range(args.repeat):
        t0 = time.perf_counter()
        res = stats.bootstrap((a, b), diff, n_resamples=args.resamples, confidence_level=0.95,
                              method="percentile", vectorized=True, paired=False,
                              random_state=np.random.default_rng(i))
        sp_times.append(time.perf_counter() - t0)

    with tempfile.TemporaryDirectory() as tmp:
        fa, fb = os.path.join(tmp, "a.txt"), os.path.join(tmp, "b.txt")
        np.savetxt(fa, a, fmt="%.17g")
        np.savetxt(fb, b, fmt="%.17g")
        exe = os.path.join(tmp, "bootstrapbench")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run(["go", "build", "-o", exe, "./bench/bootstrapbench"], check=True, cwd=root)
        out = subprocess.run([exe, "-resamples", str(args.resamples), "-repeat", "20", "-classic", fa, fb],
                             check=True, capture_output=True, text=True).stdout
    go = json.loads(out)

    se = res.standard_error
    print(f"n = {args.n} per arm, {args.resamples} resamples, 95% percentile CI of median(B) - median(A)")
    print(f"{'':28} {'low':>10} {'high':>10} {'se':>9} {'best':>10} {'median':>10}")
    rows = [("scipy.stats.bootstrap", res.confidence_interval.low, res.confidence_interval.high, se, sp_times)]
    for key, name in (("perflab", "perflab (order statistics)"), ("perflab_classic", "perflab (classic resampling)")):
        g = go[key]
        rows.append((name, g["low"], g["high"], g["se"], g["seconds"]))
    for name, lo, hi, s, ts in rows:
        print(f"{name:28} {lo:10.4f} {hi:10.4f} {s:9.4f} {min(ts)*1e3:8.2f}ms {statistics.median(ts)*1e3:8.2f}ms")

    speedup = min(sp_times) / min(go["perflab"]["seconds"])
    print(f"speed-up of perflab over scipy (best times): {speedup:.0f}x (target: at least 20x)")
    ok = True
    for end in ("low", "high"):
        d = abs(go["perflab"][end] - getattr(res.confidence_interval, end))
        if d > 0.25 * se:
            print(f"FAIL: {end} differs from scipy by {d:.4g} (> 0.25 se)")
            ok = False
    if speedup < 20:
        print("FAIL: less than 20x faster than scipy")
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
