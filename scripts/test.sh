#!/usr/bin/env bash
# scripts/test.sh — strand's test command (`make test`, and CI via .ci/run).
#
# Does its own set-up: installs what the tests need when it is absent
# (PostgreSQL and Chromium from Debian's packages, Apache Cassandra with
# Maven, the console's npm packages, Schemathesis from PyPI into a venv),
# starts the private PostgreSQL test server (scripts/postgres.sh) unless
# STRAND_TEST_POSTGRES is already set and the private Cassandra node
# (scripts/cassandra.sh) unless STRAND_TEST_CASSANDRA is already set, and
# checks that the embedded console build is what its sources give
# (scripts/console.sh check). Then runs go vet and the Go tests with the
# race detector, and, without extra arguments, Schemathesis against a real
# `strand server` (scripts/schemathesis.sh) and then a short run of each
# fuzz target. It ends with a table of its phases and how
# long each took.
#
# Phases run side by side where they can: Cassandra starts while the
# console is checked and go vet runs, and the console's browser tests
# (cmd/strand TestConsoleInBrowser, the longest test, which spends its time
# in Chromium and a `strand server`) run beside the other Go tests. Their
# output goes to $STRAND_TEST_OUTPUT/browser-tests.log (default: a
# temporary folder, named at the end), printed in full if they fail.
#
# Extra arguments go to a single `go test` run, e.g.
#   scripts/test.sh -run TestConformance -v
# STRAND_TEST_POSTGRES=skip, STRAND_TEST_CASSANDRA=skip and
# STRAND_TEST_CHROMIUM=skip skip those tests (the tests say so in their
# output); CI sets none.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${STRAND_TEST_OUTPUT:-$(mktemp -d "${TMPDIR:-/tmp}/strand-test.XXXXXX")}
mkdir -p "$OUT"
export STRAND_TEST_OUTPUT=$OUT

# A package's tests get 25 minutes, not go test's 10: on a loaded machine
# waits take longer (every wait in the tests is for an event, with a bound).
# -parallel 4 (and -p 4 packages at once), not the number of cores: most
# tests (each store's subtest of testdb.Backends, say) spend their time
# waiting for a server, a timer or a process, so two at a time left the
# cores idle.
#
# The race detector instruments strand's code and every dependency but
# SQLite's C translated to Go (modernc.org/sqlite/lib, and the C library
# and allocator it runs on, modernc.org/libc and modernc.org/memory), as it
# instruments no cgo driver's C: instrumented, SQLite took several times
# the CPU (TestSearchLimits alone: 15.6 s against 2.6 s), and the whole
# run about 1,360 CPU-seconds against 1,030. The driver's Go
# (modernc.org/sqlite) stays instrumented: left out too, the detector
# reported races in strand's code that runs without it (its
# synchronisation, presumably, no longer seen). store/sqlite and all of
# strand are instrumented.
GOTEST=(go test -race -count=1 -timeout 25m -parallel 4
	-gcflags='modernc.org/sqlite/lib=-race=false' -gcflags='modernc.org/libc/...=-race=false'
	-gcflags='modernc.org/memory=-race=false')

# -trimpath for every go command here and in the tests (the binaries
# cmd/strand's tests and Schemathesis build): compiled code then names its
# files by module path, not by this checkout's folder, so the build cache
# serves a new clone what any earlier clone compiled (without it a fresh
# clone recompiled every strand package, race and plain builds alike:
# about 90 CPU-seconds). The first run with it compiles the standard
# library once more.
export GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"

say() { echo "test.sh: $*"; }

# The phases' table: NAME, seconds, and how each ended.
PHASE_NAMES=()
PHASE_SECS=()
PHASE_ENDS=()
T0=$SECONDS
record() { PHASE_NAMES+=("$1"); PHASE_SECS+=("$2"); PHASE_ENDS+=("$3"); }
table() {
	local i
	echo
	echo "test.sh: phases (seconds of wall time; phases marked | ran beside others)"
	for i in "${!PHASE_NAMES[@]}"; do
		printf '  %-44s %6s  %s\n' "${PHASE_NAMES[$i]}" "${PHASE_SECS[$i]}" "${PHASE_ENDS[$i]}"
	done
	printf '  %-44s %6s\n' "total" "$((SECONDS - T0))"
	echo "test.sh: logs and screenshots in $OUT"
}

# run_phase NAME CMD...: runs CMD in the foreground, timed, and returns its
# status; phase NAME CMD... is the same, but a failure ends the run.
run_phase() {
	local name=$1 t=$SECONDS rc=0
	shift
	say "$name: $*"
	"$@" || rc=$?
	if ((rc != 0)); then
		record "$name" "$((SECONDS - t))" "FAILED (exit $rc)"
		say "$name failed (exit $rc)"
		return "$rc"
	fi
	record "$name" "$((SECONDS - t))" ok
}
phase() { run_phase "$@" || exit; }

# Background phases: started with begin NAME LOG CMD..., collected with
# finish NAME [LINES] (which prints LOG's last LINES, or all of it if NAME
# failed, and returns its status). begin_after EARLIER NAME LOG CMD...
# starts NAME once background phase EARLIER has ended.
declare -A BG_PID BG_START BG_LOG
begin() { begin_after "" "$@"; }
begin_after() {
	local earlier=$1 name=$2 log=$3
	shift 3
	say "$name (${earlier:+once $earlier has ended, }beside the rest; output in $log): $*"
	BG_START[$name]=$SECONDS
	BG_LOG[$name]=$log
	rm -f "$log.start" "$log.end"
	# The phase notes when it started and ended (in $log.start and
	# $log.end), for the table.
	(
		if [[ -n $earlier ]]; then
			# The end of EARLIER is its .end file (written when it ends,
			# however it ended).
			until [[ -e ${BG_LOG[$earlier]}.end ]]; do sleep 1; done
		fi
		echo "$SECONDS" >"$log.start"
		rc=0
		"$@" || rc=$?
		echo "$SECONDS" >"$log.end"
		exit "$rc"
	) >"$log" 2>&1 &
	BG_PID[$name]=$!
}
# took NAME: how long background phase NAME ran.
took() {
	local start end
	start=$(cat "${BG_LOG[$1]}.start" 2>/dev/null) || start=${BG_START[$1]}
	end=$(cat "${BG_LOG[$1]}.end" 2>/dev/null) || end=$SECONDS
	echo $((end - start))
}
finish() {
	local name=$1 rc=0
	say "waiting for $name (pid ${BG_PID[$name]}; output in ${BG_LOG[$name]})"
	wait "${BG_PID[$name]}" || rc=$?
	if ((rc != 0)); then
		cat "${BG_LOG[$name]}"
		record "| $name" "$(took "$name")" "FAILED (exit $rc)"
		say "$name failed (exit $rc): its output is above and in ${BG_LOG[$name]}"
		return "$rc"
	fi
	tail -n "${2:-5}" "${BG_LOG[$name]}"
	record "| $name" "$(took "$name")" ok
}

# Every background phase ends with the script.
cleanup() {
	local pid
	for pid in "${BG_PID[@]}"; do kill -- "$pid" 2>/dev/null || true; done
	table
}
trap cleanup EXIT

# -race needs cgo, hence a C compiler.
install_gcc() {
	command -v "$(go env CC)" >/dev/null 2>&1 && return
	[[ $EUID -eq 0 ]] || { echo "test.sh: go test -race needs a C compiler: apt-get install gcc" >&2; return 1; }
	say "no C compiler (needed by go test -race); installing gcc with apt-get..."
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null
}

full=0
[[ $# -eq 0 ]] && full=1

# Installs (each does nothing when what it installs is there).
phase "install: gcc" install_gcc
[[ -n ${STRAND_TEST_POSTGRES:-} ]] || phase "install: PostgreSQL" scripts/postgres.sh install
[[ -n ${STRAND_TEST_CASSANDRA:-} ]] || phase "install: Cassandra" scripts/cassandra.sh install
phase "install: Chromium, console npm packages" scripts/console.sh deps
((full)) && phase "install: Schemathesis" scripts/schemathesis.sh install

# Cassandra takes longest to start: it starts first, beside the rest of the
# set-up. --fresh: a node that is not running yet starts empty (a restart
# over old test data is slow; see scripts/cassandra.sh).
if [[ -z ${STRAND_TEST_CASSANDRA:-} ]]; then
	begin "start Cassandra" "$OUT/cassandra-start.log" scripts/cassandra.sh start --fresh
fi
if [[ -z ${STRAND_TEST_POSTGRES:-} ]]; then
	phase "start PostgreSQL" scripts/postgres.sh start
	STRAND_TEST_POSTGRES=$(scripts/postgres.sh url)
fi
export STRAND_TEST_POSTGRES
say "PostgreSQL for tests: STRAND_TEST_POSTGRES=$STRAND_TEST_POSTGRES"

phase "console build check" scripts/console.sh check
phase "go vet" go vet ./...

if [[ -z ${STRAND_TEST_CASSANDRA:-} ]]; then
	finish "start Cassandra" 1 || exit
	STRAND_TEST_CASSANDRA=$(scripts/cassandra.sh url)
fi
export STRAND_TEST_CASSANDRA
say "Cassandra for tests: STRAND_TEST_CASSANDRA=$STRAND_TEST_CASSANDRA"

if ((!full)); then
	phase "go test $*" "${GOTEST[@]}" ./... "$@"
	exit 0
fi

# Schemathesis and the browser tests beside the other Go tests, and fuzzing
# after Schemathesis: most tests wait (for servers, timers, processes and
# the browser) far more than they compute, so one after another they left
# the cores idle.
fuzz() {
	local target rc=0
	# A short run of each fuzz target (a failure leaves its input in
	# testdata/fuzz), with one worker: it runs beside the last of the Go
	# and browser tests, and a worker per core would take the cores from
	# them. Each run is bounded by a count of executions (about 10 s of
	# them on a loaded machine, 3 on a quiet one), not by -fuzztime=10s: a duration makes
	# Go's fuzz coordinator fail now and then with a bare "context deadline
	# exceeded" when its workers are starved of CPU (go.dev/issue/75804).
	for target in "FuzzDecodeEvents ./api 5000" "FuzzValueRoundTrip ./api 1000" "FuzzRequests ./server 150" "FuzzDecodeToken ./engine 1500"; do
		set -- $target
		echo "test.sh: go test -run=^\$ -fuzz=^$1\$ -fuzztime=$3x -parallel=1 $2"
		nice -n 10 go test -run='^$' -fuzz="^$1\$" -fuzztime="$3x" -parallel=1 "$2" || rc=$?
	done
	return $rc
}
# The browser tests are the suite's longest phase and mostly wait (for
# the browser to draw, the server to answer): on two busy cores every wait
# grew (about 230 s alone, 590 s beside the rest) and they ended last,
# a core idle under them. The phases beside them run niced (the Go tests
# by 5, Schemathesis and fuzzing by 10), so the browser's steps go first
# and the rest takes what they leave.
begin "browser tests" "$OUT/browser-tests.log" "${GOTEST[@]}" -v -run '^TestConsoleInBrowser$' ./cmd/strand
# The OpenAPI document against the server: every check and phase.
begin "Schemathesis" "$OUT/schemathesis.log" nice -n 10 scripts/schemathesis.sh
# Fuzzing once Schemathesis is done, beside what is left of the Go and
# browser tests (which end later): beside all of them its workers got a
# tenth of the executions, and after the Go tests it ran alone at the end,
# a core idle.
begin_after "Schemathesis" "fuzzing (4 targets)" "$OUT/fuzz.log" fuzz
# Every test's events go to $OUT/go-test.json (per-test times); the
# report prints what plain go test does, and the count of tests.
gotest_all() {
	nice -n 5 "${GOTEST[@]}" -json -p 4 -skip '^TestConsoleInBrowser$' ./... | scripts/gotest-report.py "$OUT/go-test.json"
}
rc=0
run_phase "go test (all packages but the browser tests)" gotest_all || rc=$?
finish "browser tests" 8 || rc=$?
finish "Schemathesis" 25 || rc=$?
finish "fuzzing (4 targets)" 4 || rc=$?
exit "$rc"
