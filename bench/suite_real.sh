#!/usr/bin/env bash
# bench/suite_real.sh: perflab suite's defaults on a real module nobody
# here wrote: gonum's floats package (68 benchmarks) at two releases,
# v0.16.0 and v0.17.0 (from the module cache or the Go module proxy, each
# committed to a scratch git repository, as bench/suite_gonum.sh does):
#   - A/A: v0.17.0 against itself, the defaults: how many benchmarks are
#     reported changed (every one a false report);
#   - A/B twice with the defaults (stop when decided, seeds 1 and 2), and
#     their agreement per benchmark (ElastiBench's measure: the same
#     direction of change, or none found in either);
#   - A/B at 20 fixed rounds (seed 3): the changes a longer run finds,
#     which the default runs should find too;
#   - the sequential workflow: go test -bench -count 10 on v0.16.0, then
#     on v0.17.0, then benchstat (installed with go install
#     golang.org/x/perf/cmd/benchstat@latest), with its wall time.
# BENCHTIME (default 10ms) is perflab's per-round run; SEQ_BENCHTIME
# (default 100ms; go test's own default is 1s) the sequential workflow's.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCHTIME=${BENCHTIME:-10ms}
SEQ_BENCHTIME=${SEQ_BENCHTIME:-100ms}
. bench/gonum_repo.sh
gonum_study v0.16.0 v0.17.0
timed() { # timed NAME CMD...: runs CMD, its wall time into $tmp/NAME.secs
	local name=$1 t0
	shift
	t0=$(date +%s.%N)
	"$@" || [ $? -eq 3 ]
	echo "$(date +%s.%N) - $t0" | bc > "$tmp/$name.secs"
}
suite() { (cd "$repo" && "$tmp/perflab" suite --benchtime "$BENCHTIME" --json --quiet "$@" ./floats); }
timed aa suite --base v0.17.0 --head v0.17.0 --out "$tmp/aa.jsonl" > "$tmp/aa.json"
timed ab1 suite --base v0.16.0 --head v0.17.0 --seed 1 --out "$tmp/ab1.jsonl" > "$tmp/ab1.json"
timed ab2 suite --base v0.16.0 --head v0.17.0 --seed 2 --out "$tmp/ab2.jsonl" > "$tmp/ab2.json"
timed fixed20 suite --base v0.16.0 --head v0.17.0 --seed 3 --trials 20 --out "$tmp/fixed20.jsonl" > "$tmp/fixed20.json"
seq() {
	for v in v0.16.0 v0.17.0; do
		git -C "$repo" -c advice.detachedHead=false checkout -q "$v"
		(cd "$repo" && go test -run '^$' -bench . -count 10 -benchtime "$SEQ_BENCHTIME" ./floats > "$tmp/seq-$v.txt")
	done
	benchstat "$tmp/seq-v0.16.0.txt" "$tmp/seq-v0.17.0.txt" > "$tmp/benchstat.txt"
}
BENCHSTAT=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
benchstat() { "$BENCHSTAT" "$@"; }
timed seq seq
python3 - "$tmp" <<'PY'
import json, re, sys
d = sys.argv[1]
def load(n):
    return {m["name"]: m for m in json.load(open(f"{d}/{n}.json"))["metrics"] if m["unit"] in ("ns/op", "sec/op")}
def secs(n):
    return float(open(f"{d}/{n}.secs").read())
def changed(r):
    return {n: m["verdict"] for n, m in r.items() if m["verdict"] in ("regression", "improvement")}
def rounds(r):
    ns = sorted(m["decision"]["n"] for m in r.values())
    return f"{ns[0]}-{ns[-1]} rounds (median {ns[len(ns)//2]})"
aa, a, b, f = load("aa"), load("ab1"), load("ab2"), load("fixed20")
print(f"A/A v0.17.0 (defaults): {len(changed(aa))} of {len(aa)} benchmarks reported changed {sorted(changed(aa))}; {rounds(aa)}; {secs('aa'):.0f} s")
for name, r in (("seed 1", a), ("seed 2", b)):
    c = changed(r)
    print(f"A/B {name} (defaults): {len(c)} of {len(r)} changed ({sum(v == 'regression' for v in c.values())} slower, {sum(v == 'improvement' for v in c.values())} faster); {rounds(r)}; {secs('ab' + name[-1]):.0f} s")
def direction(v):
    return {"regression": 1, "improvement": -1}.get(v, 0)
both = [n for n in a if n in b]
agree = [n for n in both if direction(a[n]["verdict"]) == direction(b[n]["verdict"])]
print(f"agreement of seeds 1 and 2: {len(agree)} of {len(both)} benchmarks ({100*len(agree)/max(1, len(both)):.1f}%)")
cf = changed(f)
print(f"A/B 20 fixed rounds (seed 3): {len(cf)} of {len(f)} changed; {secs('fixed20'):.0f} s")
for name, r in (("seed 1", a), ("seed 2", b)):
    found = [n for n in cf if r.get(n, {}).get("verdict") == cf[n]]
    print(f"  of those, the defaults' {name} found {len(found)} in the same direction")
sig, rows, section = 0, 0, ""
for line in open(f"{d}/benchstat.txt"):
    if "(p=" not in line:
        for unit in ("sec/op", "B/op", "allocs/op", "B/s"):
            if unit in line:
                section = unit
        continue
    if section == "sec/op":
        rows += 1
        sig += bool(re.search(r"[-+][0-9.]+%\s+\(p=", line))
print(f"sequential go test -count 10 x2 + benchstat: {sig} of {rows} benchmarks changed (p < 0.05, benchstat's own test, no correction); {secs('seq'):.0f} s")
PY
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$tmp"/*.json "$tmp"/*.jsonl "$tmp"/*.txt "$tmp"/*.secs "$KEEP"/; fi
