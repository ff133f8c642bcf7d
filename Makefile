# Developer entry points. `make test` is also what CI runs (.ci/run).

BENCHTIME ?= 2s

.PHONY: test build bench pg-start pg-stop

test:
	scripts/test.sh

build:
	go build -o bin/strand ./cmd/strand

# Store benchmarks against SQLite and the private PostgreSQL server.
bench:
	@if [ -z "$$STRAND_TEST_POSTGRES" ]; then scripts/postgres.sh start; fi
	STRAND_TEST_POSTGRES="$${STRAND_TEST_POSTGRES:-$$(scripts/postgres.sh url)}" \
		go test -run '^$$' -bench . -benchtime $(BENCHTIME) ./store/...

pg-start:
	scripts/postgres.sh start

pg-stop:
	scripts/postgres.sh stop
