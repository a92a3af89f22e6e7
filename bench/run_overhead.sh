#!/usr/bin/env bash
# bench/run_overhead.sh: perflab's harness overhead per trial.
#
# Runs `perflab run` of 500 trials per arm of /bin/true (1,000 trials, each
# recorded and synced to disk), `hyperfine -N --runs 1000 /bin/true` and
# bench/goexec (a bare os/exec loop starting /bin/true 1,000 times, and
# nothing else), alternately, ROUNDS times, and
# prints each total wall time and the ratios. goexec is what a bare Go
# loop costs on this host: perflab over goexec is about perflab's own cost.
# With BASE=<git revision>, perflab built at that revision runs in the same
# rounds too, so a change is measured before and after side by side.
# Target: perflab ≤ 1.0 × hyperfine.
#
#   bench/run_overhead.sh                 # 3 rounds
#   ROUNDS=5 BASE=main~3 bench/run_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "run_overhead: hyperfine is not installed (apt-get install hyperfine)" >&2; exit 1; }
rounds=${ROUNDS:-3}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/perflab" .
go build -o "$work/goexec" ./bench/goexec
if [ -n "${BASE:-}" ]; then
	git worktree add --detach "$work/base" "$BASE" >/dev/null 2>&1
	(cd "$work/base" && go build -o "$work/perflab-base" .)
fi
cat > "$work/true.json" <<'JSON'
{"device": "local",
 "builds": {"control": {"command": ["/bin/true"]}, "treatment": {"command": ["/bin/true"]}},
 "trials": 500, "warmup": 0, "order": "alternate", "seed": 1}
JSON

now() { date +%s.%N; }
# run BIN: runs perflab BIN once and prints its wall time.
run() {
	local t0 t1
	# A new session file each run, as a run without --out makes; truncating
	# the last run's 350 kB would add a millisecond of ext4 work that is not
	# perflab's per-trial overhead.
	rm -f "$work/s.jsonl"
	t0=$(now)
	"$1" run "$work/true.json" --headless --quiet --force --out "$work/s.jsonl" >/dev/null 2>"$work/err" || {
		code=$?; [ $code -eq 3 ] || { cat "$work/err" >&2; exit 1; }; }
	t1=$(now)
	trials=$(grep -c '"type":"trial"' "$work/s.jsonl")
	[ "$trials" -eq 1000 ] || { echo "run_overhead: $trials trials recorded, want 1000" >&2; exit 1; }
	echo "$t1 - $t0" | bc -l
}
pl_total=0; hf_total=0; go_total=0; base_total=0
for r in $(seq "$rounds"); do
	pl=$(run "$work/perflab")
	t1=$(now)
	hyperfine -N --runs 1000 --style none /bin/true >/dev/null 2>&1
	t2=$(now)
	"$work/goexec" --runs 1000 /bin/true
	t3=$(now)
	hf=$(echo "$t2 - $t1" | bc -l)
	ge=$(echo "$t3 - $t2" | bc -l)
	go_total=$(echo "$go_total + $ge" | bc -l)
	line=$(printf 'round %d: perflab %.3f s, hyperfine %.3f s, goexec %.3f s; perflab/hyperfine %.2f, goexec/hyperfine %.2f' "$r" "$pl" "$hf" "$ge" "$(echo "$pl / $hf" | bc -l)" "$(echo "$ge / $hf" | bc -l)")
	if [ -n "${BASE:-}" ]; then
		base=$(run "$work/perflab-base")
		line+=$(printf '; base %.3f s, ratio %.2f' "$base" "$(echo "$base / $hf" | bc -l)")
		base_total=$(echo "$base_total + $base" | bc -l)
	fi
	echo "$line"
	pl_total=$(echo "$pl_total + $pl" | bc -l); hf_total=$(echo "$hf_total + $hf" | bc -l)
done
printf 'total: perflab %.3f s, hyperfine %.3f s, ratio %.2f (target ≤ 1.00)\n' "$pl_total" "$hf_total" "$(echo "$pl_total / $hf_total" | bc -l)"
printf 'goexec (bare os/exec loop) %.3f s: %.2f × hyperfine; perflab %.2f × goexec\n' "$go_total" "$(echo "$go_total / $hf_total" | bc -l)" "$(echo "$pl_total / $go_total" | bc -l)"
if [ -n "${BASE:-}" ]; then
	printf 'base (%s): %.3f s, ratio %.2f\n' "$BASE" "$base_total" "$(echo "$base_total / $hf_total" | bc -l)"
fi
