#!/usr/bin/env bash
# scripts/postgres.sh — a private PostgreSQL server for strand's tests.
#
#   scripts/postgres.sh install  install PostgreSQL if needed
#   scripts/postgres.sh start    install PostgreSQL if needed, initdb, start
#   scripts/postgres.sh stop     stop it (fast shutdown)
#   scripts/postgres.sh status   exit 0 if it accepts connections
#   scripts/postgres.sh url      print its connection URL
#
# It runs its own cluster on 127.0.0.1:${STRAND_PG_PORT:-54329} with data in
# $STRAND_PG_DIR (default ~/.cache/strand/postgres; as root
# /var/lib/strand/postgres, since the postgres user cannot enter /root).
# It never touches the system's default cluster on port 5432. PostgreSQL
# refuses to run as root, so as root the server runs as the postgres user.
set -euo pipefail

PORT=${STRAND_PG_PORT:-54329}
PG_LIB=${STRAND_PG_LIB:-/usr/lib/postgresql}   # where versioned binaries live
if [[ $EUID -eq 0 ]]; then
	DIR=${STRAND_PG_DIR:-/var/lib/strand/postgres}
else
	DIR=${STRAND_PG_DIR:-$HOME/.cache/strand/postgres}
fi
LOG=$DIR/server.log
SOCK=$DIR
((${#SOCK} < 80)) || SOCK=/tmp   # Unix socket paths are limited to ~107 bytes

say() { echo "postgres.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# Newest installed server version's bin dir, or nothing.
find_bin() {
	local initdb
	initdb=$(ls -d "$PG_LIB"/*/bin/initdb 2>/dev/null | sort -V | tail -n1)
	[[ -n $initdb ]] && dirname "$initdb"
}

install_postgres() {
	local sudo=() out
	if [[ $EUID -ne 0 ]]; then
		command -v sudo >/dev/null || die "PostgreSQL is not installed and we are not root: apt-get install postgresql"
		sudo=(sudo)
	fi
	say "PostgreSQL server not found; installing it with apt-get (takes a minute)..."
	out=$(mktemp)
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive sh -c \
		'apt-get update -q && apt-get install -y -q postgresql' >"$out" 2>&1; then
		tail -n 30 "$out" >&2
		rm -f "$out"
		die "apt-get install postgresql failed"
	fi
	rm -f "$out"
}

# Run a server binary as the user PostgreSQL will accept. fd 9 (the start
# lock) is closed so the server does not inherit and keep holding it.
as_pg() {
	if [[ $EUID -eq 0 ]]; then
		(cd / && runuser -u postgres -- "$@") 9>&-
	else
		"$@" 9>&-
	fi
}

ready() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U postgres; }
# postmaster.pid names a live postgres process (PIDs get reused, e.g. after a
# container restart, and pg_ctl would then take some other process for ours).
pid_alive() {
	local pid
	pid=$(head -n1 "$DIR/postmaster.pid" 2>/dev/null) &&
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) == postgres ]]
}
ours_running() { pid_alive && as_pg "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; }

setup_bin() {
	BIN=$(find_bin) || true
	[[ -n ${BIN:-} ]] && return
	[[ ${1:-} == install ]] || die "PostgreSQL server binaries not found under $PG_LIB (run: $0 start)"
	install_postgres
	BIN=$(find_bin) || die "installed postgresql but found no $PG_LIB/*/bin/initdb"
}

start() {
	setup_bin install
	if [[ $EUID -eq 0 ]]; then
		id postgres >/dev/null 2>&1 ||
			useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/bash postgres
		mkdir -p "$DIR"
		[[ $(stat -c %U "$DIR") == postgres ]] || chown -R postgres:postgres "$DIR"
		as_pg test -w "$DIR" || die "the postgres user cannot write $DIR (is a parent directory private?); set STRAND_PG_DIR elsewhere"
	else
		mkdir -p "$DIR"
	fi
	chmod 700 "$DIR"

	# Serialise concurrent starts (e.g. two `make test` at once).
	exec 9>"$DIR.lock"
	flock 9

	if [[ ! -f $DIR/PG_VERSION ]]; then
		say "initdb $DIR"
		as_pg "$BIN/initdb" -D "$DIR" --auth=trust -U postgres --encoding=UTF8 --no-locale >/dev/null
	fi

	# A stale postmaster.pid whose PID now belongs to another process would
	# block startup: drop it.
	if [[ -f $DIR/postmaster.pid ]] && ! pid_alive; then
		say "removing stale $DIR/postmaster.pid"
		rm -f "$DIR/postmaster.pid"
	fi

	if ours_running; then
		say "already running on 127.0.0.1:$PORT ($DIR)"
	else
		ready && die "port $PORT is taken by another server; set STRAND_PG_PORT"
		say "starting PostgreSQL $(basename "$(dirname "$BIN")") on 127.0.0.1:$PORT ($DIR)"
		as_pg "$BIN/pg_ctl" -D "$DIR" -l "$LOG" -w -t 30 start -o "-p $PORT -k '$SOCK' \
			-c listen_addresses=127.0.0.1 -c max_connections=200 \
			-c fsync=on -c synchronous_commit=on" >/dev/null || start_failed
	fi

	for _ in $(seq 60); do
		ready && return 0
		sleep 0.5
	done
	start_failed
}

start_failed() {
	say "PostgreSQL did not start accepting connections on 127.0.0.1:$PORT; end of $LOG:"
	tail -n 30 "$LOG" >&2 || true
	exit 1
}

stop() {
	setup_bin
	if ours_running; then
		as_pg "$BIN/pg_ctl" -D "$DIR" -m fast -w stop >/dev/null
		say "stopped ($DIR)"
	else
		say "not running ($DIR)"
	fi
}

status() {
	setup_bin
	if ours_running && ready; then
		echo "PostgreSQL is accepting connections on 127.0.0.1:$PORT ($DIR)"
	else
		echo "PostgreSQL is not running on 127.0.0.1:$PORT ($DIR)"
		return 1
	fi
}

case ${1:-} in
install) setup_bin install ;;
start) start ;;
stop) stop ;;
status) status ;;
url) echo "postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable" ;;
*) die "usage: $0 install|start|stop|status|url" ;;
esac
