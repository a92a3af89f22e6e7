#!/usr/bin/env bash
# bench/report_vs_benchstat.sh: `perflab report` against benchstat on the
# same 100,000-trial session (3 metrics, 50,000 trials per arm).
#
# The session is synthetic (bench/gensession, +1% effect); perflab exports
# it with `report --benchstat`, and benchstat (pinned below, fetched from the
# Go module proxy into a temporary GOBIN, not added to go.mod) compares the
# arms with -col arm. Both are timed RUNS times; the best of each is shown.
# Target: perflab report no slower than benchstat. With BASE=<git revision>
# the perflab of that revision is built too and timed in the same rounds,
# so a change (e.g. the reader's integrity checks) is measured against its
# base on the same machine state.
#
#   bench/report_vs_benchstat.sh
#   TRIALS=200000 RUNS=5 bench/report_vs_benchstat.sh
#   BASE=6413e47 RUNS=9 bench/report_vs_benchstat.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da
trials=${TRIALS:-100000}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/perflab" .
if [ -n "${BASE:-}" ]; then
	mkdir "$work/base"
	git archive "$BASE" | tar -x -C "$work/base"
	(cd "$work/base" && go build -o "$work/perflab-base" .)
fi
(cd "$work" && GOBIN="$work" GOFLAGS= go install "golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION")
go run ./bench/gensession -trials "$trials" -out "$work/s.jsonl"
"$work/perflab" report "$work/s.jsonl" --benchstat > "$work/s.txt"
echo "session: $trials trials, $(du -h "$work/s.jsonl" | cut -f1) JSONL; benchstat input $(du -h "$work/s.txt" | cut -f1)"

now() { date +%s.%N; }
best() { sort -g | head -1; }
: > "$work/pl"; : > "$work/bs"; : > "$work/base.t"
for r in $(seq "$runs"); do
	t0=$(now); "$work/perflab" report "$work/s.jsonl" > "$work/pl.out" || [ $? -eq 3 ]; t1=$(now)
	"$work/benchstat" -col arm "$work/s.txt" > "$work/bs.out"; t2=$(now)
	echo "$t1 - $t0" | bc -l >> "$work/pl"; echo "$t2 - $t1" | bc -l >> "$work/bs"
	if [ -n "${BASE:-}" ]; then
		t0=$(now); "$work/perflab-base" report "$work/s.jsonl" > /dev/null || [ $? -eq 3 ]; t1=$(now)
		echo "$t1 - $t0" | bc -l >> "$work/base.t"
	fi
done
pl=$(best < "$work/pl"); bs=$(best < "$work/bs")
echo "--- perflab report"; cat "$work/pl.out"
echo "--- benchstat -col arm"; cat "$work/bs.out"
printf 'best of %d: perflab report %.3f s, benchstat %.3f s, ratio %.2f (target ≤ 1.00)\n' "$runs" "$pl" "$bs" "$(echo "$pl / $bs" | bc -l)"
if [ -n "${BASE:-}" ]; then
	base=$(best < "$work/base.t")
	printf 'best of %d: perflab at %s %.3f s, ratio to benchstat %.2f; this perflab / that one %.2f\n' "$runs" "$BASE" "$base" "$(echo "$base / $bs" | bc -l)" "$(echo "$pl / $base" | bc -l)"
fi
