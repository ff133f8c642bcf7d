#!/usr/bin/env bash
# scripts/test.sh — strand's test command (`make test`, and CI via .ci/run).
#
# Does its own set-up: starts the private PostgreSQL test server
# (scripts/postgres.sh, installing PostgreSQL if needed) unless
# STRAND_TEST_POSTGRES is already set, and the private Cassandra node
# (scripts/cassandra.sh, fetching Apache Cassandra with Maven if needed)
# unless STRAND_TEST_CASSANDRA is already set, and what the console's
# browser tests need (scripts/console.sh deps: Debian's Chromium, the
# console's npm packages) and checks that the embedded console build is
# what its sources give (scripts/console.sh check); then runs go vet and the Go
# tests with the race detector, and, without extra arguments, a short run of
# each fuzz target and Schemathesis against a real `strand server`
# (scripts/schemathesis.sh, installing Schemathesis from PyPI into a venv
# if needed). Extra arguments go to `go test`, e.g.
#   scripts/test.sh -run TestConformance -v
# STRAND_TEST_POSTGRES=skip, STRAND_TEST_CASSANDRA=skip and
# STRAND_TEST_CHROMIUM=skip skip those tests (the tests say so in their
# output); CI sets none.
set -euo pipefail
cd "$(dirname "$0")/.."

# -race needs cgo, hence a C compiler.
if ! command -v "$(go env CC)" >/dev/null 2>&1; then
	[[ $EUID -eq 0 ]] || { echo "test.sh: go test -race needs a C compiler: apt-get install gcc" >&2; exit 1; }
	echo "test.sh: no C compiler (needed by go test -race); installing gcc with apt-get..." >&2
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
fi

if [[ -z ${STRAND_TEST_POSTGRES:-} ]]; then
	scripts/postgres.sh start
	STRAND_TEST_POSTGRES=$(scripts/postgres.sh url)
fi
export STRAND_TEST_POSTGRES
echo "test.sh: PostgreSQL for tests: STRAND_TEST_POSTGRES=$STRAND_TEST_POSTGRES"

if [[ -z ${STRAND_TEST_CASSANDRA:-} ]]; then
	# --fresh: a node that is not running yet starts empty (a restart over
	# old test data is slow; see scripts/cassandra.sh).
	scripts/cassandra.sh start --fresh
	STRAND_TEST_CASSANDRA=$(scripts/cassandra.sh url)
fi
export STRAND_TEST_CASSANDRA
echo "test.sh: Cassandra for tests: STRAND_TEST_CASSANDRA=$STRAND_TEST_CASSANDRA"

# The console: its browser tests (cmd/strand TestConsoleInBrowser) need
# Chromium and console/web/node_modules (STRAND_TEST_CHROMIUM=skip skips
# them), and the embedded console/dist must be what console/web builds.
echo "test.sh: scripts/console.sh deps"
scripts/console.sh deps
echo "test.sh: scripts/console.sh check"
scripts/console.sh check

echo "test.sh: go vet ./..."
go vet ./...
# A package's tests get 25 minutes, not go test's 10: a loaded machine
# (CI shares its cores) has taken the engine's past 10.
echo "test.sh: go test -race -count=1 -timeout 25m ./... $*"
go test -race -count=1 -timeout 25m ./... "$@"
if [[ $# -eq 0 ]]; then
	# A short run of each fuzz target (a failure leaves its input in testdata/fuzz).
	for target in "FuzzDecodeEvents ./api" "FuzzValueRoundTrip ./api" "FuzzRequests ./server" "FuzzDecodeToken ./engine"; do
		set -- $target
		echo "test.sh: go test -run=^\$ -fuzz=^$1\$ -fuzztime=15s $2"
		go test -run='^$' -fuzz="^$1\$" -fuzztime=15s "$2"
	done
	# The OpenAPI document against the server: every check and phase.
	echo "test.sh: scripts/schemathesis.sh"
	scripts/schemathesis.sh
fi
