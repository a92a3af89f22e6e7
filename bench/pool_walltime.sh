#!/usr/bin/env bash
# bench/pool_walltime.sh: wall time of one experiment on 1 vs 4 phones.
#
# Starts its own adb server on a free loopback port (ADB_EMU=0 adb -P PORT,
# never 5037 or 5554–5585) and `perflab simdevice --count 4 --realtime`
# (four simulated Pixel 3 phones paced at wall-clock speed, speeds 0–3%
# apart), then runs the same experiment (TRIALS counted rounds of the feed
# app, random order, one warm-up round per device) on the first phone
# alone and on the pool `adb:model=Pixel 3`, and prints both wall times
# and their ratio. Goal: 4 phones ≤ 0.3 × 1 phone.
#
#   bench/pool_walltime.sh            # 24 rounds
#   TRIALS=40 bench/pool_walltime.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v adb >/dev/null || { echo "pool_walltime: adb is not installed (apt-get install adb)" >&2; exit 1; }
trials=${TRIALS:-24}
work=$(mktemp -d)
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
adbport=$(freeport)
while [ "$adbport" -eq 5037 ] || { [ "$adbport" -ge 5554 ] && [ "$adbport" -le 5585 ]; }; do adbport=$(freeport); done
simpid=
cleanup() {
	[ -n "$simpid" ] && kill "$simpid" 2>/dev/null && wait "$simpid" 2>/dev/null || true
	adb -P "$adbport" kill-server >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/perflab" .
ADB_EMU=0 adb -P "$adbport" start-server >/dev/null 2>&1
listen=$(freeport)
"$work/perflab" simdevice --listen "127.0.0.1:$listen" --count 4 --realtime --connect "127.0.0.1:$adbport" >"$work/sim.log" 2>&1 &
simpid=$!
for _ in $(seq 100); do
	n=$(adb -P "$adbport" devices | grep -c 'device$' || true)
	[ "$n" -ge 4 ] && break
	sleep 0.2
done
[ "$n" -ge 4 ] || { echo "pool_walltime: the simdevices did not come up" >&2; cat "$work/sim.log" >&2; exit 1; }
first=$(adb -P "$adbport" devices | awk '$2 == "device" {print $1}' | sort | head -1)
cat > "$work/exp.json" <<JSON
{"builds": {"control": {"name": "feed", "app": "feed"}, "treatment": {"name": "feed", "app": "feed"}},
 "trials": $trials, "warmup": 1, "order": "random", "seed": 1, "metrics": ["startup_ms"]}
JSON
now() { date +%s.%N; }
# run DEVICE: runs the experiment on DEVICE and prints its wall time.
run() {
	local t0 t1 code
	t0=$(now)
	"$work/perflab" run "$work/exp.json" --headless --quiet --force --out "$work/s.jsonl" --adb "127.0.0.1:$adbport" --device "$1" >/dev/null 2>"$work/err" || {
		code=$?; [ $code -eq 3 ] || { cat "$work/err" >&2; exit 1; }; }
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}
one=$(run "adb:$first")
four=$(run "adb:model=Pixel 3")
printf '%d counted rounds: 1 phone %.1f s, 4 phones %.1f s, ratio %.2f (goal <= 0.30)\n' "$trials" "$one" "$four" "$(echo "$four / $one" | bc -l)"
