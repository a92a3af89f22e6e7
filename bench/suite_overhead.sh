#!/usr/bin/env bash
# bench/suite_overhead.sh: perflab suite's own work per round besides the
# benchmark processes (issue 27's target: at most 5 ms). A generated
# module with one benchmark that does nothing; ROUNDS rounds (100) at
# -benchtime 1x. The session's time per round (from its first counted
# trial to its end, over the rounds) against two runs of the same trial
# command measured by hyperfine in the same minute: the difference is
# perflab's (the runner, the session file, the analysis after each round,
# the shell that runs the benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/suite_lib.sh
suite_module nop
printf 'package nop\n\nimport "testing"\n\nfunc BenchmarkNop(b *testing.B) {\n\tfor range b.N {\n\t}\n}\n' > nop_test.go
suite_commit one
suite_commit two
rounds=${ROUNDS:-100}
go test -c -o "$tmp/nop.test" .
hyperfine -N --warmup 5 --runs "$rounds" --export-json "$tmp/h.json" \
	"$tmp/nop.test -test.run=^\$ -test.bench=^BenchmarkNop\$ -test.benchtime=1x -test.count=1 -test.benchmem" > /dev/null
"$tmp/perflab" suite --base HEAD~1 --head HEAD --trials "$rounds" --benchtime 1x --quiet --out "$tmp/s.jsonl" > /dev/null 2>&1 || [ $? -eq 3 ]
python3 - "$tmp" "$rounds" <<'PY'
import json, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
h = json.load(open(f"{tmp}/h.json"))["results"][0]
bench = h["mean"]
ev = [json.loads(l) for l in open(f"{tmp}/s.jsonl")]
trials = [e for e in ev if e.get("type") == "trial" and not e["trial"].get("warmup")]
end = [e for e in ev if e.get("type") == "end"][-1]["t"]
first = trials[0]["t"] - trials[0]["trial"].get("duration_s", 0)
per_round = (end - first) / rounds
print(f"one benchmark process (hyperfine, mean of {rounds}): {bench*1e3:.2f} ms; perflab suite per round (2 such processes): {per_round*1e3:.2f} ms; perflab's own work per round: {(per_round - 2*bench)*1e3:.2f} ms")
PY
