#!/usr/bin/env bash
# bench/suite_known.sh: perflab suite on a generated module with known
# changes (issue 27's target: the slower and the faster benchmark found
# with the right sign in at least 9 of 10 seeded runs; the unchanged ones
# flagged no more often than the error rate allows). Revision B does 10%
# more loop work in Slower, 10% less in Faster, and leaves UNCHANGED (6)
# others as they are. SEEDS runs (10) of ROUNDS rounds (20) at -benchtime
# BENCHTIME (20ms). Prints, per seed, the verdicts of Slower and Faster
# and how many unchanged benchmarks were reported changed; then the totals.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/suite_lib.sh
suite_module known
unchanged=${UNCHANGED:-6}
gen() { # $1 Slower's units, $2 Faster's units
	{
		printf 'package known\n\nimport "testing"\n\nvar sink int\n\nfunc work(n int) {\n\tfor i := 0; i < n; i++ {\n\t\tsink += i ^ (sink >> 3)\n\t}\n}\n'
		printf '\nfunc BenchmarkSlower(b *testing.B) {\n\tfor range b.N {\n\t\twork(%d)\n\t}\n}\n' "$1"
		printf '\nfunc BenchmarkFaster(b *testing.B) {\n\tfor range b.N {\n\t\twork(%d)\n\t}\n}\n' "$2"
		for i in $(seq 1 "$unchanged"); do
			printf '\nfunc BenchmarkSame%d(b *testing.B) {\n\tfor range b.N {\n\t\twork(10000)\n\t}\n}\n' "$i"
		done
	} > known_test.go
}
gen 10000 10000
suite_commit A
gen 11000 9000
suite_commit B
seeds=${SEEDS:-10}
rounds=${ROUNDS:-20}
benchtime=${BENCHTIME:-20ms}
for seed in $(seq 1 "$seeds"); do
	"$tmp/perflab" suite --base HEAD~1 --head HEAD --trials "$rounds" --benchtime "$benchtime" --seed "$seed" --quiet --json \
		> "$tmp/r$seed.json" 2> "$tmp/e$seed" || [ $? -eq 3 ] || { cat "$tmp/e$seed"; exit 1; }
done
python3 - "$tmp" "$seeds" <<'PY'
import json, sys
tmp, seeds = sys.argv[1], int(sys.argv[2])
slower = faster = flagged = tested = 0
for s in range(1, seeds + 1):
    r = json.load(open(f"{tmp}/r{s}.json"))
    v = {m["name"].split("-")[0]: m for m in r["metrics"] if ":" not in m["name"]}
    same = [m for n, m in v.items() if n.startswith("Same")]
    f = sum(m["verdict"] in ("regression", "improvement") for m in same)
    slower += v["Slower"]["verdict"] == "regression"
    faster += v["Faster"]["verdict"] == "improvement"
    flagged += f; tested += len(same)
    print(f"seed {s}: Slower {v['Slower']['verdict']} (median {v['Slower'].get('delta_pct_median'):+.1f}%, p adj {v['Slower'].get('p_adjusted')}), Faster {v['Faster']['verdict']} (median {v['Faster'].get('delta_pct_median'):+.1f}%), unchanged reported changed {f}/{len(same)}")
print(f"Slower found as a regression in {slower}/{seeds} runs, Faster as an improvement in {faster}/{seeds}; unchanged benchmarks reported changed {flagged}/{tested}")
PY
