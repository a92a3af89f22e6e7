#!/usr/bin/env bash
# bench/suite_real.sh: perflab suite's defaults on a real module nobody
# here wrote, at two releases (from the module cache or the Go module
# proxy, each committed to a scratch git repository): by default issue
# 36's own, VictoriaMetrics v1.136.23 against v1.151.0, five lib/ packages
# (51 benchmarks); MODULE, VERSIONS ("OLD NEW") and PACKAGES choose
# another (MODULE=gonum.org/v1/gonum VERSIONS="v0.16.0 v0.17.0"
# PACKAGES=./floats: the 68 of gonum's floats).
#   - A/A: NEW against itself, the defaults: how many benchmarks are
#     reported changed (every one a false report);
#   - A/B twice with the defaults (stop when decided, seeds 1 and 2), and
#     their agreement per benchmark (ElastiBench's measure: the same
#     direction of change, or none found in either);
#   - A/B at 20 fixed rounds (seed 3): the changes a longer run finds,
#     which the default runs should find too;
#   - the sequential workflow: go test -bench -count 10 on OLD, then on
#     NEW, then benchstat (installed with go install
#     golang.org/x/perf/cmd/benchstat@latest), with its wall time.
# BENCHTIME (default: perflab's own) is perflab's per-round run;
# SEQ_BENCHTIME (default 1s, go test's own) the sequential workflow's.
# About 40 minutes on a 2-core machine, most of it the sequential
# workflow; run it with the machine otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/.."
MODULE=${MODULE:-github.com/VictoriaMetrics/VictoriaMetrics}
VERSIONS=${VERSIONS:-v1.136.23 v1.151.0}
PACKAGES=${PACKAGES:-./lib/decimal ./lib/bytesutil ./lib/stringsutil ./lib/atomicutil ./lib/promutil}
BENCHTIME=${BENCHTIME:-}
SEQ_BENCHTIME=${SEQ_BENCHTIME:-1s}
read -r OLD NEW <<< "$VERSIONS"
. bench/gonum_repo.sh
# shellcheck disable=SC2086
module_study "$MODULE" $OLD $NEW
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
timed() { # timed NAME CMD...: runs CMD, its wall time into $tmp/NAME.secs
	local name=$1 t0
	shift
	t0=$(date +%s.%N)
	"$@" || [ $? -eq 3 ]
	echo "$(date +%s.%N) - $t0" | bc > "$tmp/$name.secs"
}
# shellcheck disable=SC2086
suite() { (cd "$repo" && "$tmp/perflab" suite ${BENCHTIME:+--benchtime "$BENCHTIME"} --json --quiet "$@" $PACKAGES); }
timed aa suite --base "$NEW" --head "$NEW" --out "$tmp/aa.jsonl" > "$tmp/aa.json"
timed ab1 suite --base "$OLD" --head "$NEW" --seed 1 --out "$tmp/ab1.jsonl" > "$tmp/ab1.json"
timed ab2 suite --base "$OLD" --head "$NEW" --seed 2 --out "$tmp/ab2.jsonl" > "$tmp/ab2.json"
timed fixed20 suite --base "$OLD" --head "$NEW" --seed 3 --trials 20 --out "$tmp/fixed20.jsonl" > "$tmp/fixed20.json"
seq() {
	for v in "$OLD" "$NEW"; do
		git -C "$repo" -c advice.detachedHead=false checkout -q "$v"
		# shellcheck disable=SC2086
		(cd "$repo" && go test -run '^$' -bench . -count 10 -benchtime "$SEQ_BENCHTIME" $PACKAGES > "$tmp/seq-$v.txt")
	done
	benchstat "$tmp/seq-$OLD.txt" "$tmp/seq-$NEW.txt" > "$tmp/benchstat.txt"
}
BENCHSTAT=$(command -v benchstat || echo "$(go env GOPATH)/bin/benchstat")
benchstat() { "$BENCHSTAT" "$@"; }
timed seq seq
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$OLD" "$NEW" <<'PY'
import json, re, sys
d, old, new = sys.argv[1:4]
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
print(f"A/A {new} (defaults): {len(changed(aa))} of {len(aa)} benchmarks reported changed {sorted(changed(aa))}; {rounds(aa)}; {secs('aa'):.0f} s")
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
def verdicts(r):
    return {v: sum(m["verdict"] == v for m in r.values()) for v in sorted({m["verdict"] for m in r.values()})}
for name, r in (("A/A", aa), ("seed 1", a), ("seed 2", b), ("20 fixed", f)):
    mdes = sorted(m["decision"]["mde_pct"] for m in r.values() if m["decision"].get("mde_pct") is not None)
    print(f"  {name}: {verdicts(r)}; MDE median {mdes[len(mdes)//2]:.1f}%" if mdes else f"  {name}: {verdicts(r)}")
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
