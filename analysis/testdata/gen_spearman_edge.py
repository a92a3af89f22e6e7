#!/usr/bin/python3
"""Generate spearman_edge.json: Spearman's trend at and near |rho| = 1 for
analysis/spearman_edge_test.go.

Issue 25 item 6. Run from the repository root with Debian's python3-scipy
1.10.1 / numpy 1.24.2 (`apt-get install -y python3-scipy`):

    /usr/bin/python3 analysis/testdata/gen_spearman_edge.py > analysis/testdata/spearman_edge.json

perflab's trend is scipy.stats.spearmanr(values, positions). At
|rho| = 1 SciPy 1.10 has no special case (scipy/stats/_stats_py.py,
spearmanr): rho is numpy.corrcoef of the ranks, t = rho * sqrt(dof /
((rho + 1) * (1 - rho))) clipped at 0, p = 2 * stdtr(dof, -|t|). When
corrcoef gives rho = +-1 exactly, t is infinite and p = 0; at some n its
rounding gives 1 - 2**-53 instead, t about 1e8 and a tiny positive p (n = 5:
1.4e-24). The cases: strictly monotone values (increasing and decreasing,
n = 3 to 40 and larger), random increasing values (the same ranks), and one
swap of neighbours (rho just below 1). "rho_is_one" says whether SciPy's
rho is exactly +-1.
"""
import json
import math
import sys

import numpy as np
import scipy
from scipy import stats


def num(x):
    x = float(x)
    return None if (math.isnan(x) or math.isinf(x)) else x


def case(name, values):
    values = [float(v) for v in values]
    r = stats.spearmanr(values, np.arange(len(values)))
    return {"name": name, "values": values, "rho": num(r.statistic), "p": num(r.pvalue),
            "rho_is_one": abs(float(r.statistic)) == 1.0}


def main():
    rng = np.random.default_rng(25006)
    cases = []
    for n in list(range(3, 41)) + [50, 64, 100, 257, 1000, 4096]:
        up = np.arange(n) * 1.5 + 10
        cases.append(case(f"up_{n}", up))
        cases.append(case(f"down_{n}", up[::-1]))
    for n in (5, 7, 10, 30, 100):
        cases.append(case(f"random_up_{n}", np.sort(rng.lognormal(3, 0.5, n))))
        swapped = np.arange(n, dtype=float)
        swapped[[1, 2]] = swapped[[2, 1]]
        cases.append(case(f"one_swap_{n}", swapped))
    head = json.dumps({"generator": "gen_spearman_edge.py", "scipy": scipy.__version__, "numpy": np.__version__})
    sys.stdout.write(head[:-1] + ', "cases": [\n' + ",\n".join(json.dumps(c) for c in cases) + "\n]}\n")


if __name__ == "__main__":
    main()
