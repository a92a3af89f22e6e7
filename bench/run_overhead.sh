#!/usr/bin/env bash
# bench/run_overhead.sh: perflab's harness overhead per trial.
#
# Runs `perflab run` of 500 trials per arm of /bin/true (1,000 trials, each
# recorded and synced to disk) and `hyperfine -N --runs 1000 /bin/true`,
# alternately, ROUNDS times, and prints each total wall time and the ratio.
# Target: perflab ≤ 1.2 × hyperfine.
#
#   bench/run_overhead.sh            # 3 rounds
#   ROUNDS=5 bench/run_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "run_overhead: hyperfine is not installed (apt-get install hyperfine)" >&2; exit 1; }
rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/perflab" .
cat > "$work/true.json" <<'JSON'
{"device": "local",
 "builds": {"control": {"command": ["/bin/true"]}, "treatment": {"command": ["/bin/true"]}},
 "trials": 500, "warmup": 0, "order": "alternate", "seed": 1}
JSON

now() { date +%s.%N; }
pl_total=0; hf_total=0
for r in $(seq "$rounds"); do
	t0=$(now)
	"$work/perflab" run "$work/true.json" --headless --quiet --force --out "$work/s.jsonl" >/dev/null 2>"$work/err" || {
		code=$?; [ $code -eq 3 ] || { cat "$work/err" >&2; exit 1; }; }
	t1=$(now)
	hyperfine -N --runs 1000 --style none /bin/true >/dev/null 2>&1
	t2=$(now)
	pl=$(echo "$t1 - $t0" | bc -l); hf=$(echo "$t2 - $t1" | bc -l)
	trials=$(grep -c '"type":"trial"' "$work/s.jsonl")
	printf 'round %d: perflab %.3f s (%d trials recorded), hyperfine %.3f s, ratio %.2f\n' "$r" "$pl" "$trials" "$hf" "$(echo "$pl / $hf" | bc -l)"
	pl_total=$(echo "$pl_total + $pl" | bc -l); hf_total=$(echo "$hf_total + $hf" | bc -l)
done
printf 'total: perflab %.3f s, hyperfine %.3f s, ratio %.2f (target ≤ 1.20)\n' "$pl_total" "$hf_total" "$(echo "$pl_total / $hf_total" | bc -l)"
