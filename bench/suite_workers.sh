#!/usr/bin/env bash
# bench/suite_workers.sh: perflab suite's wall time with 1 and 4 local
# workers (issue 27's target: 4 workers at most 0.3× of one). The suite is
# a generated module of 8 sleep-bound benchmarks (each op sleeps SLEEP_MS,
# default 5 ms, so that two cores suffice to run four workers side by side:
# at 2 ms the start of each benchmark's process is a fair share of a run,
# and four workers' starts contend for the two cores) at two
# revisions; ROUNDS rounds (16), -benchtime 20x. Prints both times and the
# ratio, whole and for the rounds alone (the builds of the revisions do not
# run in parallel).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/suite_lib.sh
suite_module sleepy
sleep_ms=${SLEEP_MS:-5}
{
	printf 'package sleepy\n\nimport (\n\t"testing"\n\t"time"\n)\n'
	for i in 1 2 3 4 5 6 7 8; do
		printf '\nfunc BenchmarkSleep%d(b *testing.B) {\n\tfor range b.N {\n\t\ttime.Sleep(%d * time.Millisecond)\n\t}\n}\n' "$i" "$sleep_ms"
	done
} > sleepy_test.go
suite_commit one
suite_commit two
rounds=${ROUNDS:-16}
t() { /usr/bin/time -f "%e" "$tmp/perflab" suite --base HEAD~1 --head HEAD --trials "$rounds" --benchtime 20x --quiet --workers "$1" --out "$tmp/s$1.jsonl" > /dev/null 2> "$tmp/err$1" || [ $? -eq 3 ]; tail -1 "$tmp/err$1"; }
# The session's own time (its end event's t): the rounds, without the builds.
runs() { python3 -c "import json,sys; print([json.loads(l)['t'] for l in open(sys.argv[1]) if '\"type\":\"end\"' in l][-1])" "$tmp/s$1.jsonl"; }
one=$(t 1); r1=$(runs 1)
four=$(t 4); r4=$(runs 4)
python3 -c "print(f'perflab suite, 8 sleep-bound benchmarks ($sleep_ms ms an op), $rounds rounds: 1 worker {$one:.1f} s, 4 workers {$four:.1f} s ({$four/$one:.2f}x); the rounds alone (the session) {$r1:.1f} s and {$r4:.1f} s ({$r4/$r1:.2f}x), the rest is building both revisions')"
