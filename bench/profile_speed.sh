#!/usr/bin/env bash
# bench/profile_speed.sh: how long perflab profile takes on a 400-trial
# session (examples/sim-profile.json with 200 trials per arm: 402 profiled
# trials, about 200 functions each); best of 5, wall and user CPU seconds.
# The target (issue 26) is under a second.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/perflab" .
sed 's/"trials": 40/"trials": 200/' examples/sim-profile.json > "$tmp/exp.json"
"$tmp/perflab" run "$tmp/exp.json" --headless --out "$tmp/s.jsonl" > /dev/null 2>&1 || [ $? -eq 3 ] # 3: the regression it finds
for _ in 1 2 3 4 5; do
	/usr/bin/time -f "%e %U" "$tmp/perflab" profile "$tmp/s.jsonl" 2>&1 > /dev/null | tail -1
done | sort -n | head -1 | awk '{printf "perflab profile, 400-trial session: best of 5: %.2f s wall, %.2f s user CPU\n", $1, $2}'
