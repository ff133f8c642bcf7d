#!/usr/bin/env bash
# scripts/schemathesis.sh — Schemathesis against a real `strand server`.
#
# Builds strand, starts `strand server` on a temporary SQLite file and a free
# port of 127.0.0.1 (with a short --poll-wait, so that task polls and result
# waits answer 204 quickly), and runs Schemathesis against its OpenAPI
# document (/api/v1/openapi.json) with every check and every phase
# (examples, coverage, fuzzing, stateful). Exits non-zero on any failure.
# No worker polls, so queries fail fast (--query-poller-window).
#
# Schemathesis $VERSION comes from PyPI into a venv, made on first use:
# $STRAND_SCHEMATHESIS_DIR (default ~/.cache/strand/schemathesis-VERSION; as
# root /var/lib/strand/schemathesis-VERSION). It needs python3 with venv;
# as root python3-venv is installed with apt-get when missing.
#
# STRAND_SCHEMATHESIS_EXAMPLES sets the examples per operation (default 8:
# 136 operations at 25 each took ~90 CPU-seconds of make test's ~1,200, on
# a machine whose two cores the suite keeps busy from start to end, and at
# 10 it ended with the Go tests, leaving fuzzing to run alone after them;
# every check and phase still runs),
# STRAND_SCHEMATHESIS_SEED a seed (default: a random one, printed). One worker:
# on CPython 3.11.7 and older, Hypothesis in two threads trips "SystemError: AST
# constructor recursion depth mismatch" (CPython gh-106905).
# Extra arguments go to `st run`; `scripts/schemathesis.sh install` only
# makes the venv, if it is missing (make test times installs apart).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

VERSION=4.32.5
EXAMPLES=${STRAND_SCHEMATHESIS_EXAMPLES:-8}
if [[ $EUID -eq 0 ]]; then
	VENV=${STRAND_SCHEMATHESIS_DIR:-/var/lib/strand/schemathesis-$VERSION}
else
	VENV=${STRAND_SCHEMATHESIS_DIR:-$HOME/.cache/strand/schemathesis-$VERSION}
fi

say() { echo "schemathesis.sh: $*" >&2; }
die() { say "$*"; exit 1; }

install() {
	command -v python3 >/dev/null || die "python3 not found: apt-get install python3 python3-venv"
	if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
		[[ $EUID -eq 0 ]] || die "python3 cannot make a venv: apt-get install python3-venv"
		say "python3 has no venv; installing python3-venv with apt-get..."
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
	fi
	say "installing schemathesis $VERSION from PyPI into $VENV..."
	rm -rf "$VENV"
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install -q --disable-pip-version-check "schemathesis==$VERSION"
}
if ! [[ -x $VENV/bin/st ]] || [[ $("$VENV/bin/st" --version 2>/dev/null) != *" $VERSION" ]]; then
	install
fi
[[ ${1:-} == install ]] && exit 0

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
	if [[ -n $SERVER_PID ]]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

go build -o "$WORK/strand" ./cmd/strand
# No worker runs: a query fails at once (409 no_worker) instead of waiting.
"$WORK/strand" server --store "sqlite://$WORK/strand.db" --listen 127.0.0.1:0 --poll-wait 200ms --drain 1s \
	--query-poller-window 100ms --query-timeout 5s \
	>"$WORK/server.out" 2>"$WORK/server.log" &
SERVER_PID=$!
URL=
# Waits for the server's readiness, not for a time; the bound is generous (a
# loaded machine) and only there so a server that hangs does not hang us.
for _ in $(seq 1200); do
	URL=$(sed -n 's/^listening on //p' "$WORK/server.out")
	[[ -n $URL ]] && curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
	kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "strand server did not start"; }
	URL=
	sleep 0.1
done
[[ -n $URL ]] || die "strand server did not say it was listening and ready (/readyz) within 120 s"

SEED=${STRAND_SCHEMATHESIS_SEED:-$RANDOM$RANDOM}
say "strand server at $URL; schemathesis $VERSION, $EXAMPLES examples per operation, seed $SEED"
cd "$WORK"
rc=0
(
	set -x
	SCHEMATHESIS_HOOKS=schemathesis_hooks PYTHONPATH="$ROOT/scripts" "$VENV/bin/st" --config-file "$ROOT/scripts/schemathesis.toml" \
		run "$URL/api/v1/openapi.json" \
		--checks all --phases examples,coverage,fuzzing,stateful --max-examples "$EXAMPLES" --seed "$SEED" \
		--workers 1 --request-timeout 60 --no-color --generation-database none "$@"
) || rc=$?
if grep -q -i panic "$WORK/server.log"; then
	grep -i -A20 panic "$WORK/server.log" >&2
	die "the server logged a panic"
fi
exit $rc
