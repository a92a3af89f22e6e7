#!/usr/bin/env bash
# bench/suite_gonum.sh: perflab suite on a real module, gonum's floats
# package (68 benchmarks; gonum v0.16.0 and v0.17.0 from the Go module
# proxy, each committed to a scratch git repository):
#   - A/A: v0.17.0 against itself: how many of the tested benchmark
#     metrics are reported changed (Benjamini–Hochberg at 5%: under the
#     complete null, the chance of any report is at most 5%);
#   - agreement: v0.16.0 against v0.17.0 twice (seeds 1 and 2): the share
#     of the metrics tested in both runs whose verdicts agree (ElastiBench:
#     95.65% of benchmarks).
# 16 rounds (the smallest signed-rank p of n pairs is 2/2^n, and
# Benjamini–Hochberg's first step over 68 tested metrics needs 0.05/68:
# 12 rounds at the least, so that at 10 nothing can be reported), and
# -benchtime 10ms; about 10 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/gonum_repo.sh
gonum_study v0.16.0 v0.17.0
suite() { (cd "$repo" && "$tmp/perflab" suite --benchtime 10ms --trials 16 --json --quiet "$@" ./floats) || [ $? -eq 3 ]; }
suite --base v0.17.0 --head v0.17.0 > "$tmp/aa.json"
suite --base v0.16.0 --head v0.17.0 --seed 1 > "$tmp/ab1.json"
suite --base v0.16.0 --head v0.17.0 --seed 2 > "$tmp/ab2.json"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def load(n):
    return {m["name"]: m for m in json.load(open(f"{d}/{n}.json"))["metrics"]}
aa = load("aa")
tested = [m for m in aa.values() if m.get("p_adjusted") is not None]
flagged = [m["name"] for m in tested if m["verdict"] in ("regression", "improvement")]
print(f"A/A v0.17.0: {len(flagged)} of {len(tested)} tested metrics reported changed {flagged}")
a, b = load("ab1"), load("ab2")
both = [n for n in a if n in b and a[n].get("p_adjusted") is not None and b[n].get("p_adjusted") is not None]
agree = [n for n in both if a[n]["verdict"] == b[n]["verdict"]]
changed = sum(1 for n in both if a[n]["verdict"] in ("regression", "improvement"))
print(f"v0.16.0 vs v0.17.0 twice: {len(agree)} of {len(both)} tested metrics agree ({100*len(agree)/max(1,len(both)):.1f}%); {changed} reported changed in the first run")
PY
