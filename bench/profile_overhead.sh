#!/usr/bin/env bash
# bench/profile_overhead.sh: what profiling adds to a trial's wall time on
# local. The same command (testdata's profiled program, SECONDS of CPU work
# per run, default about 1 s) runs as A/A twice, interleaved: once plain,
# once with --profile (perf record), and once with --profile --profiler
# pprof (its own Go profile); prints the median wall_ms of each and the
# ratios to plain. perf record's own start and end are a fixed cost (it
# reads the kernel's symbols), so the ratio falls with longer trials.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${ITERS:-600000000}
trials=${TRIALS:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/perflab" .
go build -o "$tmp/profiled" ./lab/local/testdata/profiled
cmd="$tmp/profiled -n $iters"
median() { "$tmp/perflab" report "$1" --json | python3 -c 'import json,sys,statistics
r=json.load(sys.stdin); print(next(m["a"]["median"] for m in r["metrics"] if m["name"]=="wall_ms"))'; }
run() { "$tmp/perflab" run --headless --trials "$trials" --order alternate --out "$tmp/$1.jsonl" "${@:2}" -- "$cmd" "$cmd" > /dev/null 2>&1 || [ $? -eq 3 ]; }
run plain
run perf --profile
run pprof --profile --profiler pprof
p=$(median "$tmp/plain.jsonl"); f=$(median "$tmp/perf.jsonl"); g=$(median "$tmp/pprof.jsonl")
python3 -c "p,f,g=$p,$f,$g; print(f'median wall_ms: plain {p:.1f}, perf record {f:.1f} ({f/p:.3f}x), Go pprof {g:.1f} ({g/p:.3f}x)')"
