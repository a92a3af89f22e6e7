# Run: /usr/bin/python3 analysis/testdata/gen_groupseq_reference.py > analysis/testdata/groupseq_reference.json
# Reference for analysis/groupseq.go: two-sided group-sequential boundaries with a look after every
# round k = 2..K and Lan–DeMets O'Brien–Fleming-type spending α(t) = 2 − 2Φ(z_{α/2}/√t), t = k/K
# (Lan & DeMets 1983). Computed independently of the Go code: the sub-density of the score
# S_k = Σ x_i (unit-variance increments) is carried on a fine grid of points by the trapezoid rule
# (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19), each boundary found with
# scipy.optimize.brentq; then a seeded numpy Monte Carlo of 400,000 Gaussian random walks checks that
# the boundaries cross with probability α ("mc_alpha", reported, with its binomial standard error).
import json, math
import numpy as np
from scipy import optimize, stats

def boundaries(alpha, K, h=0.02, last=None):
    """The boundaries z[k] (k = 2..last, default K) on the standardized scale."""
    za = stats.norm.isf(alpha / 2)
    spent = lambda t: 2 * stats.norm.sf(za / math.sqrt(t))
    # S_1 ~ N(0, 1): density on a grid.
    x = np.arange(-9, 9 + h / 2, h)
    f = stats.norm.pdf(x)
    z = {}
    done = 0.0
    for k in range(2, (last or K) + 1):
        # predictive density of S_k on a grid covering ±9√k
        y = np.arange(-9 * math.sqrt(k), 9 * math.sqrt(k) + h / 2, h)
        dx = np.diff(x)
        w = np.zeros(len(x)); w[:-1] += dx / 2; w[1:] += dx / 2  # trapezoid weights
        a = spent(k / K) - done
        # P(|S_k| ≥ b, continued) = ∫ f(x) [Q(b − x) + Q(b + x)] dx
        cross = lambda b: float(np.sum(w * f * (stats.norm.sf(b - x) + stats.norm.sf(b + x))))
        if a <= 1e-300:
            b = math.inf
        else:
            b = optimize.brentq(lambda b: cross(b) - a, 0, 60 * math.sqrt(k), xtol=1e-12, rtol=1e-12)
        done += a
        z[k] = b / math.sqrt(k)
        # g(y) = ∫ f(x) φ(y − x) dx on |y| < b
        if math.isfinite(b):  # the grid ends exactly at ±b, where the sub-density is cut
            y = np.concatenate(([-b], y[np.abs(y) < b], [b]))
        g = stats.norm.pdf(y[:, None] - x[None, :]) @ (w * f)
        x, f = y, g
    return z

def mc(alpha, K, z, n=400000, seed=2026):
    rng = np.random.default_rng(seed)
    hit = np.zeros(n, dtype=bool)
    s = rng.standard_normal(n)
    for k in range(2, K + 1):
        s += rng.standard_normal(n)
        hit |= np.abs(s) >= z[k] * math.sqrt(k)
    return float(hit.mean())

def main():
    cases = []
    for alpha, K in ((0.05, 10), (0.05, 40), (0.01, 40), (0.05, 100)):
        z = boundaries(alpha, K)
        p = mc(alpha, K, z)
        cases.append({"alpha": alpha, "max_rounds": K, "z": [z[k] for k in range(2, K + 1)],
                      "mc_alpha": p, "mc_se": math.sqrt(p * (1 - p) / 400000)})
    print(json.dumps(cases))


if __name__ == "__main__":  # gen_repeatedp_reference.py imports boundaries
    main()
