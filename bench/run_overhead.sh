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
# The "where the time goes" lines split each harness's wall time: perflab's
# from its session (each trial's command wall_ms, the trial's duration_s
# and the t of its event; the rest of the run is start-up, setup and the
# final sync), hyperfine's from its JSON export (its runs' times; the rest
# is all it does outside them).
#
# Wall time on a shared host moves ±10% between minutes. The last line adds
# what moves far less: each harness's own CPU time per trial, its total CPU
# time (bench/cpuof.py) minus what the commands it ran took (perflab's
# session records each trial's user_ms and sys_ms, hyperfine's JSON export
# and goexec --children-cpu report theirs). It counts work on every core,
# including what overlaps a command, so it is a cost, not the wall time.
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

cpuof() { python3 bench/cpuof.py "$@"; }
# timed OUT CMD...: runs CMD, its "wall cpu" (seconds) to OUT.
timed() { local out=$1; shift; cpuof run "$out" -- "$@"; }
# run BIN: runs perflab BIN once and prints its wall time; adds its own
# CPU time (total minus the trials') to the file $work/BIN-name.cpu.
run() {
	# A new session file each run, as a run without --out makes; truncating
	# the last run's 350 kB would add a millisecond of ext4 work that is not
	# perflab's per-trial overhead.
	rm -f "$work/s.jsonl"
	timed "$work/t" "$1" run "$work/true.json" --headless --quiet --force --out "$work/s.jsonl" >/dev/null 2>"$work/err" || {
		code=$?; [ $code -eq 3 ] || { cat "$work/err" >&2; exit 1; }; }
	trials=$(grep -c '"type":"trial"' "$work/s.jsonl")
	[ "$trials" -eq 1000 ] || { echo "run_overhead: $trials trials recorded, want 1000" >&2; exit 1; }
	read -r wall cpu < "$work/t"
	echo "$cpu - $(cpuof session "$work/s.jsonl")" | bc -l >> "$work/$(basename "$1").cpu"
	cpuof phases "$work/s.jsonl" "$wall" >> "$work/$(basename "$1").phases"
	echo "$wall"
}
# sum FILE: the sum of FILE's lines.
sum() { paste -sd+ "$1" | bc -l; }
pl_total=0; hf_total=0; go_total=0; base_total=0
for r in $(seq "$rounds"); do
	pl=$(run "$work/perflab")
	timed "$work/t" hyperfine -N --runs 1000 --style none --export-json "$work/hf.json" /bin/true >/dev/null 2>&1
	read -r hf cpu < "$work/t"
	echo "$cpu - $(cpuof hyperfine "$work/hf.json")" | bc -l >> "$work/hyperfine.cpu"
	cpuof hfphases "$work/hf.json" "$hf" >> "$work/hyperfine.phases"
	timed "$work/t" "$work/goexec" --runs 1000 --children-cpu /bin/true > "$work/gochildren"
	read -r ge cpu < "$work/t"
	echo "$cpu - $(cat "$work/gochildren")" | bc -l >> "$work/goexec.cpu"
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
# per-trial µs: total seconds over rounds × 1,000 trials.
us() { echo "$(sum "$work/$1.cpu") * 1000 / $rounds" | bc -l; }
line=$(printf 'harness CPU per trial (its CPU time minus the commands'"'"'): perflab %.1f µs, hyperfine %.1f µs, goexec %.1f µs' "$(us perflab)" "$(us hyperfine)" "$(us goexec)")
if [ -n "${BASE:-}" ]; then
	line+=$(printf ', base %.1f µs' "$(us perflab-base)")
fi
echo "$line"
# col FILE N: the mean of column N of FILE.
col() { awk -v c="$2" '{ s += $c } END { printf "%.1f", s / NR }' "$1"; }
printf 'where the time goes (mean of the rounds): perflab per trial: command %s µs, the trial'"'"'s own work around it %s µs, between trials %s µs; outside its trials %s ms per run (start-up, setup, final sync, exit)\n' \
	"$(col "$work/perflab.phases" 1)" "$(col "$work/perflab.phases" 2)" "$(col "$work/perflab.phases" 3)" "$(col "$work/perflab.phases" 4)"
printf '  hyperfine per run %s µs; outside its runs %s ms per run (start-up, between runs, exit)\n' \
	"$(col "$work/hyperfine.phases" 1)" "$(col "$work/hyperfine.phases" 2)"
