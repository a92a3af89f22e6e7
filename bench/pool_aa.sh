#!/bin/sh
# Issue 15 item 7, second half: the A/A false-positive rate of
# `perflab validate` over a pool of 4 phones whose speeds differ by up to
# 10% (`perflab simdevice --count 4 --spread 0.1`, through Debian's real
# adb server), against the exact binomial band around α. The phones are
# seeded and not paced (simulated time); rounds go to whichever phone is
# free first, so repeated runs differ a little. bench/pool_walltime.sh
# measures the wall time.
#
# Usage: bench/pool_aa.sh [TRIALS_PER_ARM] [AA_EXPERIMENTS]
# (defaults 40 and 240, the K validate asks for at α = 5%; about 2 minutes).
# Needs adb (apt-get install adb) and /usr/bin/python3 with scipy. Starts
# its own adb server on a free port (never 5037 or 5554-5585) with
# ADB_EMU=0 and kills exactly it, and the simdevices, at the end.
set -eu
cd "$(dirname "$0")/.."
TRIALS=${1:-40}
AA=${2:-240}
tmp=$(mktemp -d)
adbport=""
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for p in $pids; do wait "$p" 2>/dev/null || true; done
	if [ -n "$adbport" ]; then ADB_EMU=0 adb -P "$adbport" kill-server 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ -z "${PERFLAB:-}" ]; then
	go build -o "$tmp/perflab" .
	PERFLAB="$tmp/perflab"
fi

# freeport prints a free loopback port outside adb's own.
freeport() {
	python3 - <<'PY'
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close()
    if p != 5037 and not 5554 <= p <= 5585 and p < 65000:
        print(p); break
PY
}

adbport=$(freeport)
ADB_EMU=0 adb -P "$adbport" start-server >/dev/null 2>&1
server=127.0.0.1:$adbport

# startlab PACE SPREAD SEED: serves 4 phones, waits until adb lists them
# online, and prints their device IDs.
startlab() {
	pace=$1 spread=$2 seed=$3
	first=$(freeport)
	"$PERFLAB" simdevice --listen "127.0.0.1:$first" --count 4 --spread "$spread" --seed "$seed" $pace \
		--connect "$server" >"$tmp/sim.$seed.out" 2>&1 &
	pids="$pids $!"
	i=0
	while [ "$(grep -c 'listening on' "$tmp/sim.$seed.out" || true)" -lt 4 ]; do
		i=$((i + 1)); [ $i -lt 600 ] || { cat "$tmp/sim.$seed.out" >&2; exit 1; }; sleep 0.1
	done
	addrs=$(sed -n 's/.*listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$tmp/sim.$seed.out")
	for a in $addrs; do
		i=0
		until adb -P "$adbport" devices | grep -q "^$a[[:space:]]*device"; do
			i=$((i + 1)); [ $i -lt 600 ] || { echo "$a not online" >&2; exit 1; }; sleep 0.1
		done
	done
	for a in $addrs; do printf 'adb:%s ' "$a"; done
}

# The A/A experiment: the sim app against itself with the reset procedure
# (kill, snapshot restore, dialogs, clock) and app metrics over adb reverse.
cat >"$tmp/aa.json" <<JSON
{
  "device": "sim:pixel",
  "builds": {
    "control": {"name": "feed", "app": "feed"},
    "treatment": {"name": "feed again", "app": "feed"}
  },
  "trials": $TRIALS,
  "warmup": 1,
  "order": "random",
  "seed": 7,
  "controls": {"kill_app": true, "restore_snapshot": true, "dismiss_dialogs": true, "clock_reset": true},
  "metrics": ["startup_ms"],
  "alpha": 0.05
}
JSON


echo "== A/A false-positive rate over a pool of 4 phones, speeds 1.00-1.10, $AA experiments"
devs=$(startlab "" 0.1 11)
poolargs=""
for d in $devs; do poolargs="$poolargs --device $d"; done
"$PERFLAB" validate --experiment "$tmp/aa.json" $poolargs --adb "$server" --aa "$AA" --effect-runs 0 --quiet --json >"$tmp/validate.json" || true
/usr/bin/python3 - "$tmp/validate.json" <<'PY'
# The band: the central 95% of Binomial(n, alpha) (scipy.stats.binom.interval),
# where an honest test's false-positive count lands 95% of the time.
import json, sys
from scipy.stats import binom
lines = [l for l in open(sys.argv[1]) if l.strip()]
r = json.loads(lines[-1])
aa, alpha = r["aa"], 0.05
n, k = aa["experiments"], aa["false_positives"]
lo, hi = binom.interval(0.95, n, alpha)
inside = lo <= k <= hi
print(f"A/A: {k}/{n} false positives (rate {k / n:.3f}, Clopper-Pearson 95% CI [{aa['ci_low']:.3f}, {aa['ci_high']:.3f}])")
print(f"binomial band around alpha={alpha} for n={n}: [{lo:.0f}, {hi:.0f}] -> {'inside' if inside else 'OUTSIDE'}")
v = r["variance"]
print(f"{v['metric']}: control mean {v['control']['mean']:.1f} {v['unit']} sd {v['control']['sd']:.1f}, treatment mean {v['treatment']['mean']:.1f} sd {v['treatment']['sd']:.1f}")
PY
