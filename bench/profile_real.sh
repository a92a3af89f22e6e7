#!/usr/bin/env bash
# bench/profile_real.sh: profiling a real program nobody here wrote (issue
# 38): Debian's gzip -6 against gzip -9 on the same input, per seed three
# runs of TRIALS rounds: plain, --profile (every round under perf record)
# and --profile-every 4; prints per run the exit status, the verdicts of
# sys_ms, user_ms and wall_ms, wall_ms's and user_ms's intervals and
# their half-widths, the medians of sys_ms, and the rounds the verdicts
# used.
# With --profile-every 4 also the medians of wall_ms, user_ms and sys_ms
# of the profiled rounds' trials against the unprofiled ones' in the same
# session (interleaved: the same host conditions), the perturbation the
# interleaving keeps out of the verdicts.
# SEEDS (default "1 2 3 4 5"), TRIALS (default 20), INPUT (bytes of
# base64 noise, default 1500000), MODES (default "plain profile every4").
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${SEEDS:-1 2 3 4 5}
trials=${TRIALS:-20}
. bench/profile_lib.sh
prof_setup
head -c "${INPUT:-1500000}" /dev/urandom | base64 > "$tmp/in.txt"
perturbation() { python3 - "$1" <<'PY'
import json, statistics, sys
vals = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    t = e.get("trial")
    if e.get("type") != "trial" or not t or t.get("warmup") or t.get("status") != "ok":
        continue
    for m in t["metrics"]:
        vals.setdefault((m["name"], bool(t.get("profile_round"))), []).append(m["value"])
out = []
for name in ("wall_ms", "user_ms", "sys_ms"):
    p, u = vals.get((name, True)), vals.get((name, False))
    if p and u:
        out.append("%s %.1f profiled / %.1f unprofiled" % (name, statistics.median(p), statistics.median(u)))
print("    medians in the session:", "; ".join(out))
PY
}
for seed in $seeds; do
	for mode in ${MODES:-plain profile every4}; do
		flags=()
		case $mode in profile) flags=(--profile) ;; every4) flags=(--profile-every 4) ;; esac
		cat > "$tmp/gz.json" <<JSON
{"device": "local", "trials": $trials, "warmup": 1, "order": "random", "seed": $seed,
 "metrics": ["wall_ms", "user_ms", "sys_ms"],
 "builds": {"control": {"name": "gzip -6", "command": ["gzip", "-6", "-c", "$tmp/in.txt"]},
            "treatment": {"name": "gzip -9", "command": ["gzip", "-9", "-c", "$tmp/in.txt"]}}}
JSON
		code=0
		"$tmp/perflab" run "$tmp/gz.json" --headless --out "$tmp/$mode-$seed.jsonl" "${flags[@]}" > /dev/null 2>&1 || code=$?
		printf 'seed %s %-7s exit %s: %s\n' "$seed" "$mode" "$code" "$(verdicts "$tmp/$mode-$seed.jsonl")"
		[ "$mode" = every4 ] && perturbation "$tmp/$mode-$seed.jsonl"
	done
done
