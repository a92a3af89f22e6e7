#!/usr/bin/env bash
# bench/profile_programs.sh: perflab run --profile on real programs with
# one function slowed by a known amount (issue 38), per seed an unprofiled
# and a profiled session of the same plan (same seed, same order): is the
# slowed function named and ranked first by perflab profile, and do the
# profiled session's verdicts match the unprofiled one's? Parts (PARTS,
# default "c go adb"):
#   c    lab/local/testdata/cwork (gcc -O1 -g), A `work 60 20`, B `work 78
#        20` (hot_loop 30% more work), profiled by perf record: the build
#        with its symbols and the stripped one with its debug file beside
#        it (objcopy --only-keep-debug, strip, --add-gnu-debuglink); once,
#        stripped without a debug file (then --symbols with the full
#        build), and go tool pprof -top BINARY on --pprof's output;
#   go   lab/local/testdata/profiled built twice, B with -X main.morePct=20
#        (drawRows 20% more work), profiled by its own Go CPU profile
#        ("profiler": "pprof", $PERFLAB_CPUPROFILE);
#   adb  the simulated phone (perflab simdevice) on a private adb server,
#        both on free loopback ports, profiled by its simpleperf; the sim
#        feed app with feed.decodeImage ADB_PCT% slower (default 10).
# The local parts' primary metric is user_ms (the program's CPU time: on a
# loaded host its wall time is mostly the scheduler's); each function's
# time per trial is its share of the samples × user_ms.
# SEEDS (default "1 2 3 4 5"), TRIALS (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/profile_lib.sh
seeds=${SEEDS:-1 2 3 4 5}
trials=${TRIALS:-20}
prof_setup

# session NAME MODE [FLAGS]: runs $tmp/NAME.json with FLAGS into
# $tmp/NAME-MODE.jsonl, its exit status into $tmp/NAME-MODE.exit.
session() {
	local code=0
	"$tmp/perflab" run "$tmp/$1.json" --headless --out "$tmp/$1-$2.jsonl" --force "${@:3}" > /dev/null 2>&1 || code=$?
	echo "$code" > "$tmp/$1-$2.exit"
}

# compare NAME FUNCTION: the exits and verdicts of NAME's plain and
# profiled sessions, and the profile's ranking of FUNCTION.
compare() {
	local wp wq
	wp=$(words "$tmp/$1-plain.jsonl")
	wq=$(words "$tmp/$1-prof.jsonl")
	printf '  %s: exits %s / %s, verdicts %s\n' "$1" "$(cat "$tmp/$1-plain.exit")" "$(cat "$tmp/$1-prof.exit")" "$([ "$wp" = "$wq" ] && echo agree || echo DIFFER)"
	printf '    plain:    %s\n    profiled: %s\n' "$(verdicts "$tmp/$1-plain.jsonl")" "$(verdicts "$tmp/$1-prof.jsonl")"
	printf '    profile:  %s\n' "$(ranked "$tmp/$1-prof.jsonl" "$2")"
}

# pair NAME FUNCTION PROFILE-FLAGS...: NAME unprofiled and profiled.
pair() {
	session "$1" plain
	session "$1" prof "${@:3}"
	compare "$1" "$2"
}

# local_exp NAME SEED PROFILER A-ARGV B-ARGV: a local experiment file.
local_exp() {
	cat > "$tmp/$1.json" <<JSON
{"device": "local", "trials": $trials, "warmup": 1, "order": "random", "seed": $2, "profiler": "$3",
 "metrics": ["user_ms", "wall_ms", "sys_ms"], "primary": "user_ms",
 "builds": {"control": {"name": "A", "command": $4}, "treatment": {"name": "B", "command": $5}}}
JSON
}

part_c() {
	mkdir -p "$tmp/full" "$tmp/strip" "$tmp/bare"
	gcc -O1 -g -fno-omit-frame-pointer -o "$tmp/full/work" lab/local/testdata/cwork/work.c
	objcopy --only-keep-debug "$tmp/full/work" "$tmp/strip/work.debug"
	strip --strip-all -o "$tmp/strip/work" "$tmp/full/work"
	(cd "$tmp/strip" && objcopy --add-gnu-debuglink=work.debug work)
	strip --strip-all -o "$tmp/bare/work" "$tmp/full/work"
	for seed in $seeds; do
		echo "c, seed $seed"
		for b in full strip; do
			local_exp "c-$b-$seed" "$seed" perf "[\"$tmp/$b/work\", \"60\", \"20\"]" "[\"$tmp/$b/work\", \"78\", \"20\"]"
			pair "c-$b-$seed" hot_loop --profile
		done
	done
	local s=${seeds%% *}
	echo "c, stripped without a debug file, seed $s"
	local_exp "c-bare" "$s" perf "[\"$tmp/bare/work\", \"60\", \"20\"]" "[\"$tmp/bare/work\", \"78\", \"20\"]"
	pair c-bare "work (unsymbolized)" --profile
	printf '    --symbols: %s\n' "$(ranked "$tmp/c-bare-prof.jsonl" hot_loop --symbols "$tmp/full")"
	"$tmp/perflab" profile "$tmp/c-bare-prof.jsonl" --pprof "$tmp/pp" > /dev/null
	echo "    go tool pprof -top full/work B.pb.gz:"
	go tool pprof -top "$tmp/full/work" "$tmp/pp/B.pb.gz" 2> /dev/null | grep -E 'hot_loop|cold_loop' | sed 's/^/      /'
	echo "    without the binary:"
	go tool pprof -top "$tmp/pp/B.pb.gz" 2> /dev/null | grep -E 'work\+' | head -2 | sed 's/^/      /'
}

part_go() {
	go build -o "$tmp/goA" ./lab/local/testdata/profiled
	go build -ldflags "-X main.morePct=20" -o "$tmp/goB" ./lab/local/testdata/profiled
	for seed in $seeds; do
		echo "go, seed $seed"
		local_exp "go-$seed" "$seed" pprof "[\"$tmp/goA\", \"-n\", \"300000000\"]" "[\"$tmp/goB\", \"-n\", \"300000000\"]"
		pair "go-$seed" main.drawRows --profile
	done
}

# phone SEED: a new simulated phone with noise seed SEED on a free port,
# connected to the private adb server; its address is $phone_addr.
phone() {
	[ -z "${sim:-}" ] || { kill "$sim"; wait "$sim" || true; }
	phone_addr=127.0.0.1:$(free_port)
	"$tmp/perflab" simdevice --listen "$phone_addr" --seed "$1" --preset pixel --connect "127.0.0.1:$port" >> "$tmp/simdevice.log" 2>&1 &
	sim=$!
	for _ in $(seq 60); do
		adb -P "$port" devices | grep -q "^$phone_addr[[:space:]]*device" && return
		sleep 1
	done
	echo "phone $phone_addr did not come online" >&2
	return 1
}

part_adb() {
	port=$(free_port) # global, as sim: the exit trap stops what they name
	sim=
	# The server inherits ADB_EMU=0: it scans no emulator ports.
	ADB_EMU=0 adb -P "$port" start-server > /dev/null 2>&1
	trap '[ -z "$sim" ] || kill "$sim"; ADB_EMU=0 adb -P "$port" kill-server; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
	export ANDROID_ADB_SERVER_PORT=$port # perflab's adb server, as adb's
	local pct=${ADB_PCT:-10}
	for seed in $seeds; do
		echo "adb, seed $seed"
		# Each session on a new phone of the same noise seed: the plain
		# and the profiled one see the same noise.
		for mode in plain prof; do
			phone "$seed"
			cat > "$tmp/adb-$seed.json" <<JSON
{"device": "adb:$phone_addr", "trials": $trials, "warmup": 1, "order": "random", "seed": $seed,
 "metrics": ["startup_ms"], "controls": {"kill_app": true, "dismiss_dialogs": true},
 "builds": {"control": {"name": "feed", "app": "feed"},
            "treatment": {"name": "feed, decodeImage $pct% slower", "app": "feed", "effect": {"function": "feed.decodeImage", "pct": $pct}}}}
JSON
			session "adb-$seed" "$mode" $([ "$mode" = prof ] && echo --profile)
		done
		compare "adb-$seed" feed.decodeImage
		printf '    trials with the same startup_ms in both: %s\n' "$(same_values "$tmp/adb-$seed-plain.jsonl" "$tmp/adb-$seed-prof.jsonl")"
	done
}

# same_values A B: how many of the two sessions' counted trials, in order,
# have the same metrics.
same_values() { python3 - "$1" "$2" <<'PY'
import json, sys
def values(path):
    out = []
    for line in open(path):
        e = json.loads(line)
        t = e.get("trial")
        if e.get("type") == "trial" and t and not t.get("warmup"):
            out.append([(m["name"], m["value"]) for m in t.get("metrics") or []])
    return out
a, b = values(sys.argv[1]), values(sys.argv[2])
print("%d of %d" % (sum(x == y for x, y in zip(a, b)), max(len(a), len(b))))
PY
}

for part in ${PARTS:-c go adb}; do
	"part_$part"
done
