#!/usr/bin/env bash
# bench/report_vs_benchstat.sh: `perflab report` against benchstat on the
# same 100,000-trial session (3 metrics, 50,000 trials per arm).
#
# The session is synthetic (bench/gensession, +1% effect); perflab exports
# it with `report --benchstat`, and benchstat (pinned below, fetched from the
# Go module proxy into a temporary GOBIN, not added to go.mod) compares the
# arms with -col arm. Both are timed RUNS times; the best wall time and the
# best CPU time (user + sys) of each are shown.
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

best() { sort -g | head -1; }
# timed NAME CMD...: appends CMD's wall time to $work/NAME.wall and its CPU
# time (user + sys, from getrusage: bench/cpuof.py; GNU time rounds to
# 10 ms) to $work/NAME.cpu. CPU time is what a loaded host disturbs least;
# both are shown.
timed() {
	local name=$1 rc=0
	shift
	python3 bench/cpuof.py run "$work/$name.time" -- "$@" || rc=$?
	[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || return "$rc"
	cut -d' ' -f1 "$work/$name.time" >> "$work/$name.wall"
	cut -d' ' -f2 "$work/$name.time" >> "$work/$name.cpu"
}
for r in $(seq "$runs"); do
	timed pl "$work/perflab" report "$work/s.jsonl" > "$work/pl.out"
	timed bs "$work/benchstat" -col arm "$work/s.txt" > "$work/bs.out"
	if [ -n "${BASE:-}" ]; then
		timed base "$work/perflab-base" report "$work/s.jsonl" > /dev/null
	fi
done
echo "--- perflab report"; cat "$work/pl.out"
echo "--- benchstat -col arm"; cat "$work/bs.out"
for kind in wall cpu; do
	pl=$(best < "$work/pl.$kind"); bs=$(best < "$work/bs.$kind")
	printf 'best of %d, %s time: perflab report %.3f s, benchstat %.3f s, ratio %.2f (target ≤ 1.00)\n' "$runs" "$kind" "$pl" "$bs" "$(echo "$pl / $bs" | bc -l)"
	if [ -n "${BASE:-}" ]; then
		base=$(best < "$work/base.$kind")
		printf 'best of %d, %s time: perflab at %s %.3f s, ratio to benchstat %.2f; this perflab / that one %.2f\n' "$runs" "$kind" "$BASE" "$base" "$(echo "$base / $bs" | bc -l)" "$(echo "$pl / $base" | bc -l)"
	fi
done
