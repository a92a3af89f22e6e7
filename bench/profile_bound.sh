#!/bin/sh
# profile_bound.sh: runs example:sim-profile (40 profiled rounds on the
# simulated phone) and bench/profile_bound.py on its per-function
# analysis: the noise model checked against the session, and what a +3%
# change in one function can be found with at 20, 40 and 80 rounds
# (docs/profiles.md, "What the data allow"). About 10 s.
#
#	sh bench/profile_bound.sh [profile_bound.py flags]
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/perflab" .
# exit 3: the example's build is 3% slower in decodeImage, a regression
"$tmp/perflab" run example:sim-profile --headless --out "$tmp/s.jsonl" >/dev/null 2>&1 || [ $? -eq 3 ]
"$tmp/perflab" profile --json "$tmp/s.jsonl" >"$tmp/p.json"
/usr/bin/python3 bench/profile_bound.py "$tmp/p.json" "$@"
