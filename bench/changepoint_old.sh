#!/bin/sh
# Runs today's change-point study (internal/cpstudy, bench/changepoint_study)
# against the detector of an older commit, for docs/history.md's "old"
# columns: a temporary git worktree of REV (default 83afb2a, the last
# commit with the E-divisive + Welch detector) with the current study
# copied in. Arguments after REV go to the study.
#
#	sh bench/changepoint_old.sh 83afb2a -series 1000
set -eu
rev=${1:-83afb2a}
[ $# -gt 0 ] && shift
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$tmp/wt" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$root" worktree add --detach "$tmp/wt" "$rev" >/dev/null 2>&1
rm -rf "$tmp/wt/internal/cpstudy" "$tmp/wt/bench/changepoint_study"
cp -r "$root/internal/cpstudy" "$tmp/wt/internal/cpstudy"
cp -r "$root/bench/changepoint_study" "$tmp/wt/bench/changepoint_study"
rm -f "$tmp/wt/internal/cpstudy/"*_test.go
cd "$tmp/wt" && go run ./bench/changepoint_study "$@"
