#!/usr/bin/python3
"""Reference for TestPoolDisagreementHolm (analysis/pool_test.go): the
device-heterogeneity p of a five-metric pool report, raw
(scipy.stats.kruskal of the per-round ratios B/A across three devices; the
test's ranks of log(B/A) are those of B/A) and adjusted by Holm's step-down
(Holm 1979), written out by hand. Run:

    /usr/bin/python3 analysis/testdata/pool_holm.py

and paste the printed rows into the test. Round j on device dev of metric m
has A = 100 and B = 100 (1 + delta), delta = ((7j + 3 dev + 5m) mod 11)/10
plus the metric's device shift (SHIFTS).
"""
from scipy import stats

ROUNDS = 8
SHIFTS = [[0, 0, 3], [0, 0, 0.5], [0, 0, 0], [0, 0, 0], [0, 0, 0]]


def deltas(m):
    return [[((j * 7 + dev * 3 + m * 5) % 11) / 10 + SHIFTS[m][dev] for j in range(ROUNDS)] for dev in range(3)]


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, run = [0.0] * len(ps), 0.0
    for j, i in enumerate(order):
        run = max(run, min(1.0, (len(ps) - j) * ps[i]))
        out[i] = run
    return out


def main():
    raw = []
    for m in range(len(SHIFTS)):
        groups = [[100 * (1 + d) / 100 for d in g] for g in deltas(m)]
        raw.append(float(stats.kruskal(*groups).pvalue))
    for p, a in zip(raw, holm(raw)):
        print(f"{{{p!r}, {a!r}}},")


if __name__ == "__main__":
    main()
