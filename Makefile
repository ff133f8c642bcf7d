# Developer entry points. `make test` is also what CI runs (.ci/run).

BENCHTIME ?= 2s

.PHONY: test build bench pg-start pg-stop cassandra-start cassandra-stop console console-check console-test

test:
	scripts/test.sh

build:
	go build -o bin/strand ./cmd/strand

# The web console: rebuild console/dist from console/web (commit both),
# check that console/dist is what the sources build, run its browser tests.
console:
	scripts/console.sh build

console-check:
	scripts/console.sh check

console-test:
	scripts/console.sh deps
	go test -race -count=1 ./cmd/strand -run '^TestConsoleInBrowser$$' -v

# Store benchmarks against SQLite, the private PostgreSQL server and the
# private Cassandra node, one package at a time (-p 1) so they do not share
# the CPU.
bench:
	@if [ -z "$$STRAND_TEST_POSTGRES" ]; then scripts/postgres.sh start; fi
	@if [ -z "$$STRAND_TEST_CASSANDRA" ]; then scripts/cassandra.sh start; fi
	STRAND_TEST_POSTGRES="$${STRAND_TEST_POSTGRES:-$$(scripts/postgres.sh url)}" \
	STRAND_TEST_CASSANDRA="$${STRAND_TEST_CASSANDRA:-$$(scripts/cassandra.sh url)}" \
		go test -p 1 -run '^$$' -bench . -benchtime $(BENCHTIME) ./store/...

pg-start:
	scripts/postgres.sh start

pg-stop:
	scripts/postgres.sh stop

cassandra-start:
	scripts/cassandra.sh start

cassandra-stop:
	scripts/cassandra.sh stop
