#!/usr/bin/env bash
# test.sh: installs what the tests need (Debian's adb, valgrind, linux-perf,
# openssh-server, hyperfine, tmux, GNU time, python3-scipy, postgresql,
# chromium (the dashboard test, headless through chromedp); benchstat through go install) when missing, then checks formatting, vets
# and runs every test (with the race detector but for pure computation),
# listing the 10 slowest at the end. README.md and .ci/run use it.
set -euo pipefail
cd "$(dirname "$0")"

need=()
for pair in adb:adb /usr/sbin/sshd:openssh-server valgrind:valgrind perf:linux-perf hyperfine:hyperfine tmux:tmux /usr/bin/time:time chromium:chromium; do
	command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
/usr/bin/python3 -c 'import scipy' >/dev/null 2>&1 || need+=(python3-scipy)
# PostgreSQL's server binaries, for the tests of a shared history (each test
# binary runs its own private cluster on a loopback port: internal/pgtest).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
	echo "test.sh: installing ${need[*]}"
	SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# benchstat (golang.org/x/perf, pinned) for the interop tests of report --benchstat.
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da
if ! command -v benchstat >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/benchstat" ]; then
	echo "test.sh: installing benchstat@$benchstat_version"
	GOFLAGS=-mod=mod go install "golang.org/x/perf/cmd/benchstat@$benchstat_version"
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
# go vet first: its build of every package (without the race detector) is
# the one the tests' perflab binary and the pure-computation tests reuse;
# run beside them, the two go commands would build it twice.
go vet ./...

# go test -json goes through internal/testsummary, which prints what go
# test prints (failed tests' output, each package's ok/FAIL line) and then
# the 10 slowest tests; -v prints every test's output. TEST_JSON=FILE keeps
# the JSON. The exit status is go test's (pipefail).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/testsummary" ./internal/testsummary
verbose=""
for arg in "$@"; do
	case $arg in -v | -v=true | -test.v | -test.v=true) verbose=-v ;; esac
done

# The race detector watches the packages whose goroutines are their own:
# lab/... (devices, pools, tunnels, workers, proxies), sessions/... (the
# engine, history, watch, dashboard), tui and the rest. The others run
# without it, on the build go vet just made: the statistics (analysis/...),
# the simulated phone (lab/sim), bisect (sessions/bisect) and the seeded
# studies (sessions/study), computation with no goroutine of its own that
# spends 7 times the CPU under it (analysis and the studies: 128 s against
# 18 s), and cli, whose tests drive
# those packages end to end, mostly through perflab processes that the
# detector does not see; under it cli alone took 240 s of a 2-core
# machine's 7 minutes from a fresh clone.
norace="./analysis/... ./lab/sim ./sessions/bisect ./sessions/study ./cli"
race=$(go list ./... | grep -v -e '/analysis$' -e '/analysis/' -e '/lab/sim$' -e '/sessions/bisect$' -e '/sessions/study$' -e '/cli$')
tests() {
	go test -count=1 -timeout 60m -p 2 -json "$@" $norace >"$tmp/norace.json" &
	local pid=$! rc=0
	# -p 4: many packages mostly wait (real-time runs, a 65 s adb
	# command, tmux screens); four at a time keep both cores busy.
	go test -race -count=1 -timeout 60m -p 4 -json "$@" $race || rc=$?
	wait "$pid" || rc=$?
	cat "$tmp/norace.json"
	return "$rc"
}
tests "$@" | tee "${TEST_JSON:-$tmp/test.json}" | "$tmp/testsummary" $verbose
