#!/usr/bin/python3
"""Write examples/history.csv: a synthetic history of 60 commits, twelve
hours apart, laid out as Apache Otava reads CSV (commit, time, then a
column per metric). startup_ms has 1% noise and a +4% step at the 41st
commit (index 40); rss_mb has 0.5% noise and one +20% spike at index 25,
which must not be taken for a step. Seeded; regenerate with

    /usr/bin/python3 bench/gen_history_csv.py > examples/history.csv
"""
import datetime

import numpy as np

rng = np.random.default_rng(30)
print("commit,time,startup_ms,rss_mb")
t0 = datetime.datetime(2026, 9, 1, 9, 0, 0)
for i in range(60):
    commit = "".join(rng.choice(list("0123456789abcdef"), 12))
    t = (t0 + datetime.timedelta(hours=12 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    startup = 700 * (1 + 0.01 * rng.standard_normal()) * (1.04 if i >= 40 else 1)
    rss = 180 * (1 + 0.005 * rng.standard_normal()) * (1.2 if i == 25 else 1)
    print(f"{commit},{t},{startup:.1f},{rss:.2f}")
