#!/usr/bin/env bash
# bench/profile_every.sh: does --profile-every 4 cost the verdicts'
# intervals anything? (issue 38: its wall_ms interval within 10% of an
# unprofiled run's on the same pair.) On a shared host one session's
# interval width swings with the load, so per seed the two sessions run
# back to back, in alternating order (odd seeds plain first, even seeds
# every 4 first), with as many unprofiled rounds behind the verdicts:
# plain TRIALS rounds, --profile-every 4 the rounds that leave TRIALS
# unprofiled. Per seed it prints both sessions' wall_ms and user_ms
# half-widths (±%) and their ratio; at the end the medians over the seeds.
# And inside each every-4 session, whether a profiled round disturbs the
# round after it: the median distance of a round's log(B/A) from the
# session's median, for the rounds right after a profiled round and for
# the others, and the first trial after a profiled round against the
# other unprofiled trials of its build; at the end the same pooled over
# the sessions (bench/profile_every_pool.py: within a session the host is
# the same for both groups).
# The pair: lab/local/testdata/cwork (pure CPU), A `work HOT 80`, B `work
# HOT*1.1 80` (HOT default 240: about 0.4 s a trial).
# SEEDS (default 1..20: about 25 minutes on a busy 2-core host), TRIALS
# (default 20), HOT.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/profile_lib.sh
seeds=${SEEDS:-$(seq -s " " 1 20)}
trials=${TRIALS:-20}
hot=${HOT:-240}
prof_setup
gcc -O1 -g -fno-omit-frame-pointer -o "$tmp/work" lab/local/testdata/cwork/work.c
# Counted rounds K, 2K, … are profiled: T unprofiled rounds need T + T/(K-1).
every_trials=$((trials + trials / 3))

# widths SESSION: wall_ms's and user_ms's half-widths, "W U".
widths() { report "$1" | python3 -c '
import json, sys
hw = {m["name"]: ((m.get("paired") or {}), m) for m in json.load(sys.stdin)["metrics"]}
def w(n):
    p = hw[n][0]
    return "%.2f" % ((p["ci_high_pct"] - p["ci_low_pct"]) / 2) if p.get("ci_low_pct") is not None else "nan"
print(w("wall_ms"), w("user_ms"), hw["wall_ms"][0].get("n"))'; }

run() {
	local flags=() n=$trials
	[ "$2" = every4 ] && flags=(--profile-every 4) && n=$every_trials
	cat > "$tmp/w.json" <<JSON
{"device": "local", "trials": $n, "warmup": 1, "order": "random", "seed": $1,
 "metrics": ["wall_ms", "user_ms"],
 "builds": {"control": {"name": "A", "command": ["$tmp/work", "$hot", "80"]},
            "treatment": {"name": "B", "command": ["$tmp/work", "$((hot * 11 / 10))", "80"]}}}
JSON
	"$tmp/perflab" run "$tmp/w.json" --headless --out "$tmp/$2-$1.jsonl" "${flags[@]}" > /dev/null 2>&1 || [ $? -eq 3 ]
}

: > "$tmp/rows"
for seed in $seeds; do
	if [ $((seed % 2)) -eq 1 ]; then run "$seed" plain; run "$seed" every4; else run "$seed" every4; run "$seed" plain; fi
	read -r pw pu pn <<< "$(widths "$tmp/plain-$seed.jsonl")"
	read -r ew eu en <<< "$(widths "$tmp/every4-$seed.jsonl")"
	echo "$seed $pw $pu $ew $eu" >> "$tmp/rows"
	printf 'seed %s: wall_ms ±%s%% plain (%s pairs), ±%s%% every 4 (%s pairs); user_ms ±%s%%, ±%s%%\n' "$seed" "$pw" "$pn" "$ew" "$en" "$pu" "$eu"
	python3 - "$tmp/every4-$seed.jsonl" <<'PY'
import json, math, statistics, sys
rounds, prof = {}, set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    t = e.get("trial")
    if e.get("type") != "trial" or not t or t.get("warmup") or t.get("status") != "ok":
        continue
    v = next(m["value"] for m in t["metrics"] if m["name"] == "wall_ms")
    rounds.setdefault(t["round"], {})[t["arm"]] = (t["index"], v)
    if t.get("profile_round"):
        prof.add(t["round"])
ratio = {r: math.log(a["treatment"][1] / a["control"][1]) for r, a in rounds.items() if len(a) == 2 and r not in prof}
med = statistics.median(ratio.values())
after = [abs(x - med) for r, x in ratio.items() if r - 1 in prof]
other = [abs(x - med) for r, x in ratio.items() if r - 1 not in prof]
# The first trial after a profiled round, against its build's others.
first, rest = {}, {}
for r, a in rounds.items():
    if r in prof:
        continue
    firstarm = min(a, key=lambda k: a[k][0])
    for arm, (_, v) in a.items():
        (first if r - 1 in prof and arm == firstarm else rest).setdefault(arm, []).append(v)
rel = [statistics.median(first[k]) / statistics.median(rest[k]) - 1 for k in first if k in rest]
print("  every 4: |log ratio - median| %.2f%% after a profiled round (%d rounds), %.2f%% others (%d); first trial after one %+.1f%% against its build's others"
      % (100 * statistics.median(after), len(after), 100 * statistics.median(other), len(other), 100 * statistics.mean(rel)))
PY
done
python3 - "$tmp/rows" <<'PY'
import math, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for name, i in (("wall_ms", 1), ("user_ms", 2)):
    p = [float(r[i]) for r in rows if r[i] != "nan" and r[i + 2] != "nan"]
    e = [float(r[i + 2]) for r in rows if r[i] != "nan" and r[i + 2] != "nan"]
    per = sorted(b / a for a, b in zip(p, e))
    # The median ratio's 95% interval from the sign test's order statistics.
    n, k = len(per), 0
    while k < n and sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n < 0.025:
        k += 1
    ci = "[%.2f, %.2f]" % (per[k - 1], per[n - k]) if k > 0 else "(too few seeds)"
    print("%s over %d seeds: median half-width plain ±%.2f%%, every 4 ±%.2f%% (ratio %.2f); per-seed ratios %s, median %.2f %s, every 4 narrower in %d"
          % (name, len(p), statistics.median(p), statistics.median(e), statistics.median(e) / statistics.median(p),
             " ".join("%.2f" % x for x in per), statistics.median(per), ci, sum(x < 1 for x in per)))
PY
python3 bench/profile_every_pool.py "$tmp"/every4-*.jsonl
