#!/usr/bin/env bash
# bench/calibration.sh: the full calibration studies whose figures the
# manual quotes (A/A false-positive rates, power, order red flags, the
# sequential rule's error over thousands of experiments; docs/figures.md
# says on which pages).
#
# The tests run small seeded versions of these studies (internal/calibration
# sizes them); with PERFLAB_CALIBRATION=1 the same tests run the full
# studies. This script runs every test of each package that uses
# internal/calibration that way, without the race detector, and prints
# each test's figures (its log lines) and result. Rerun it when the
# statistics change and update the manual's figures from its output.
#
# Usage: bench/calibration.sh [go test flags]   (e.g. -run TestOrderRedFlagAARate)
# About 1.5 minutes on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=$(grep -rl --include='*_test.go' 'perflab/internal/calibration"' . | xargs -n1 dirname | sort -u)
set +e
# Only the tests that log (their figures) or fail, and each package's line.
# shellcheck disable=SC2086 # one argument per package
PERFLAB_CALIBRATION=1 go test -count=1 -timeout 2h -v "$@" $pkgs | awk '
	/^[[:space:]]+[[:alnum:]_]+_test\.go:[0-9]+:/ { logs = logs $0 "\n"; next }
	/^--- FAIL/ || (/^--- PASS/ && logs != "") { printf "%s%s\n", logs, $0; logs = ""; next }
	/^--- / { logs = ""; next }
	/^(ok|FAIL)[[:space:]]|^FAIL$|^panic/ { print }'
exit "${PIPESTATUS[0]}"
