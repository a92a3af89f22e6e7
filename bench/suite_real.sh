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
# BENCHTIME (default: perflab's own) is perflab's per-round run, and
# SUITE_FLAGS more flags of every perflab suite run (e.g. --max-trials 60);
# SEQ_BENCHTIME (default 1s, go test's own) the sequential workflow's;
# SEQ_DIR and SEQ_SECS reuse an earlier run's benchstat.txt and wall time
# (KEEP=DIR keeps a run's files in DIR; bench/suite_real_summary.py DIR
# OLD NEW prints its figures again).
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
suite() { (cd "$repo" && "$tmp/perflab" suite ${BENCHTIME:+--benchtime "$BENCHTIME"} ${SUITE_FLAGS:-} --json --quiet "$@" $PACKAGES); }
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
if [ -n "${SEQ_SECS:-}" ]; then
	# The sequential workflow's figures from an earlier run on this host
	# (its benchstat.txt in SEQ_DIR, its wall time SEQ_SECS).
	cp "$SEQ_DIR/benchstat.txt" "$tmp/benchstat.txt"
	echo "$SEQ_SECS" > "$tmp/seq.secs"
else
	timed seq seq
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 bench/suite_real_summary.py "$tmp" "$OLD" "$NEW"
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$tmp"/*.json "$tmp"/*.jsonl "$tmp"/*.txt "$tmp"/*.secs "$KEEP"/; fi
