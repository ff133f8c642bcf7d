#!/usr/bin/env bash
# scripts/cassandra.sh — a private single-node Apache Cassandra for strand's tests.
#
#   scripts/cassandra.sh install  fetch Cassandra with Maven if needed
#   scripts/cassandra.sh start    fetch Cassandra with Maven if needed, configure, start
#   scripts/cassandra.sh start --fresh
#                                 the same, but a node that is not running starts
#                                 on an empty data directory (what make test does)
#   scripts/cassandra.sh stop     stop it (SIGTERM; SIGKILL if it is not gone in 60 s)
#   scripts/cassandra.sh status   exit 0 if it is running and answers a CQL query
#   scripts/cassandra.sh url      print its contact point, host:port (what gocql takes)
#
# The first start fetches org.apache.cassandra:cassandra-all and its runtime
# dependencies (about 70 MB) with Maven into $STRAND_CASSANDRA_DIR/lib-VERSION;
# later starts reuse them. The node keeps its data, config and logs in
# $STRAND_CASSANDRA_DIR (default ~/.cache/strand/cassandra; as root
# /var/lib/strand/cassandra), listens only on 127.0.0.1 (CQL on
# ${STRAND_CASSANDRA_PORT:-19042}, never the default 9042; internode on
# ${STRAND_CASSANDRA_STORAGE_PORT:-17000}; local JMX on
# ${STRAND_CASSANDRA_JMX_PORT:-17199}) and has a ${STRAND_CASSANDRA_HEAP:-1G}
# heap. Its log is $STRAND_CASSANDRA_DIR/system.log (JVM output:
# cassandra.out).
#
# Needs java (Cassandra 5.0 runs on Java 11 or 17; STRAND_CASSANDRA_JAVA or
# JAVA_HOME picks one other than the java on PATH) and, for the first start,
# mvn. STRAND_CASSANDRA_VERSION picks another 5.0.x release,
# STRAND_CASSANDRA_WAIT how long start waits for CQL (seconds, default 900:
# a busy 2-core machine has taken over 3 minutes; start says every 30 s
# what it is waiting for). `scripts/cassandra.sh install` only fetches it.
#
# Why --fresh: every test keyspace is dropped when its test ends, but the
# node keeps what its lightweight transactions wrote (system.paxos, kept
# for gc_grace_seconds, 10 days) for tables long dropped, and reads all of
# it at startup. After two days of test runs a restart took over 3 minutes
# (373 MB of paxos state); an empty node answers CQL in about 5 s.
set -euo pipefail

VERSION=${STRAND_CASSANDRA_VERSION:-5.0.9}
PORT=${STRAND_CASSANDRA_PORT:-19042}
STORAGE_PORT=${STRAND_CASSANDRA_STORAGE_PORT:-17000}
JMX_PORT=${STRAND_CASSANDRA_JMX_PORT:-17199}
HEAP=${STRAND_CASSANDRA_HEAP:-1G}
WAIT=${STRAND_CASSANDRA_WAIT:-900}
DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.6.1
if [[ $EUID -eq 0 ]]; then
	DIR=${STRAND_CASSANDRA_DIR:-/var/lib/strand/cassandra}
else
	DIR=${STRAND_CASSANDRA_DIR:-$HOME/.cache/strand/cassandra}
fi
DIR=$(realpath -m -- "$DIR") # it goes into file: URLs
LIB=$DIR/lib-$VERSION
CONF=$DIR/conf
DATA=$DIR/data
LOG=$DIR/system.log
OUT=$DIR/cassandra.out
PIDFILE=$DIR/cassandra.pid
RELEASE=   # what the node reports as its release_version, set by ready
LOG_START= # size of $LOG when this start launched the node

say() { echo "cassandra.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# find_java sets JAVA and warns about a Java that Cassandra 5.0 does not support.
find_java() {
	JAVA=${STRAND_CASSANDRA_JAVA:-}
	if [[ -z $JAVA && -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then
		JAVA=$JAVA_HOME/bin/java
	fi
	if [[ -z $JAVA ]]; then
		JAVA=$(command -v java) ||
			die "java not found: Cassandra needs a Java 17 (or 11) runtime, e.g. apt-get install openjdk-17-jdk-headless"
	fi
	local ver major
	ver=$("$JAVA" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n1) || true
	[[ -n $ver ]] || die "$JAVA -version does not run; set STRAND_CASSANDRA_JAVA to a Java 17 java"
	major=${ver%%.*}
	[[ $major == 1 ]] && { major=${ver#1.}; major=${major%%.*}; }
	case $major in
	11 | 17) ;;
	*) say "warning: Cassandra 5.0 supports Java 11 and 17, not $ver ($JAVA); trying anyway (set STRAND_CASSANDRA_JAVA to a Java 17 java)" ;;
	esac
}

tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The PID file names a live process started by this script (PIDs get reused,
# e.g. after a container restart).
pid_alive() {
	local pid cmd
	pid=$(cat "$PIDFILE" 2>/dev/null) && [[ $pid =~ ^[0-9]+$ ]] &&
		cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") &&
		[[ $cmd == *" -Dcassandra.config=file://$CONF/cassandra.yaml "*CassandraDaemon* ]]
}

# cql_probe speaks the CQL native protocol (v4) over bash's /dev/tcp: STARTUP,
# then SELECT release_version FROM system.local. It succeeds, printing the
# version, only if the node answers the query.
cql_probe() (
	be16() { printf '\\x%02x\\x%02x' $(($1 >> 8 & 255)) $(($1 & 255)); }
	be32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)); }
	# send STREAM OPCODE BODY-ESCAPES BODY-LENGTH
	# shellcheck disable=SC2059 # the format is the frame, built of escapes
	send() { printf "\\x04\\x00$(be16 "$1")\\x$2$(be32 "$4")$3" >&3; }
	# recv sets opcode and body (body bytes as text, with the others as newlines).
	recv() {
		local h
		h=$(timeout 10 dd bs=9 count=1 iflag=fullblock status=none <&3 | od -An -tu1 -v) || return 1
		# shellcheck disable=SC2086 # split od's numbers
		set -- $h
		(($# == 9)) || return 1
		opcode=$5
		local len=$(($6 << 24 | $7 << 16 | $8 << 8 | $9))
		body=
		if ((len > 0)); then
			body=$(timeout 10 dd bs="$len" count=1 iflag=fullblock status=none <&3 | tr -c '0-9A-Za-z._-' '\n') || return 1
		fi
	}
	local opcode body q='SELECT release_version FROM system.local'
	exec 3<>"/dev/tcp/127.0.0.1/$PORT" || return 1
	send 1 01 "$(be16 1)$(be16 11)CQL_VERSION$(be16 5)3.0.0" 22
	recv && [[ $opcode == 2 ]] || return 1 # READY
	send 2 07 "$(be32 ${#q})$q$(be16 1)\\x00" $((4 + ${#q} + 3))
	recv && [[ $opcode == 8 ]] || return 1 # RESULT
	grep -m1 -E '^[0-9]+\.[0-9]+' <<<"$body" || echo unknown
) 2>/dev/null

# ready waits until the node answers CQL, or it died, or WAIT seconds passed.
ready() {
	local t0=$SECONDS next=$((SECONDS + 30))
	while ((SECONDS < t0 + WAIT)); do
		RELEASE=$(cql_probe) && return 0
		pid_alive || return 1
		if ((SECONDS >= next)); then
			say "still waiting for the node to answer CQL on 127.0.0.1:$PORT ($((SECONDS - t0)) s; its log: $LOG)"
			next=$((SECONDS + 30))
		fi
		sleep 0.5
	done
	return 1
}

fetch() {
	[[ -f $LIB/.complete ]] && return 0
	command -v mvn >/dev/null ||
		die "mvn not found: the first start fetches Cassandra with Maven (apt-get install maven)"
	rm -rf "$DIR"/fetch.*   # left by an interrupted fetch (we hold the lock)
	local work t0=$SECONDS
	work=$(mktemp -d "$DIR/fetch.XXXXXX")
	cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>strand.test</groupId>
  <artifactId>cassandra-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
	say "fetching Apache Cassandra $VERSION and its dependencies with Maven (about 70 MB, first start only)..."
	if ! (cd "$work" && mvn -B -q -Dstyle.color=never "$DEP_PLUGIN:copy-dependencies" -DincludeScope=runtime \
		-DoutputDirectory="$work/lib") >"$work/mvn.log" 2>&1 9>&- </dev/null ||
		[[ ! -f $work/lib/cassandra-all-$VERSION.jar ]]; then
		tail -n 30 "$work/mvn.log" >&2
		rm -rf "$work"
		die "Maven could not fetch org.apache.cassandra:cassandra-all:$VERSION"
	fi
	touch "$work/lib/.complete"
	rm -rf "$LIB"
	mv "$work/lib" "$LIB"
	rm -rf "$work"
	local old
	for old in "$DIR"/lib-*; do
		[[ $old == "$LIB" ]] || rm -rf "$old"
	done
	local jars=("$LIB"/*.jar)
	say "fetched ${#jars[@]} jars ($(du -sh "$LIB" | cut -f1)) in $((SECONDS - t0)) s into $LIB"
}

# configure writes the node's config, anew on every start. cluster_name,
# num_tokens and partitioner must not change once the node has data.
configure() {
	mkdir -p "$CONF" "$DATA" "$DIR/triggers"
	cat >"$CONF/cassandra.yaml" <<EOF
# Written by scripts/cassandra.sh on every start; edits here are lost.
cluster_name: strand-test
num_tokens: 16
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:$STORAGE_PORT"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: $STORAGE_PORT
start_native_transport: true
native_transport_port: $PORT

data_file_directories: ["$DATA/data"]
commitlog_directory: "$DATA/commitlog"
saved_caches_directory: "$DATA/saved_caches"
hints_directory: "$DATA/hints"
cdc_raw_directory: "$DATA/cdc_raw"

authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer

# Cassandra's default: fsync every 10 s, not per write. A test node on a
# shared 2-core machine trades durability across a machine crash for speed.
commitlog_sync: periodic
commitlog_sync_period: 10000ms
# Paxos v1 (5.0's default) for strand's lightweight transactions.
paxos_variant: v1
# Room for strand's largest batch (12 MiB): Cassandra refuses a mutation over
# max_mutation_size (at most half a commit-log segment), and a CQL message
# over native_transport_max_message_size (by default derived from the heap).
commitlog_segment_size: 64MiB
max_mutation_size: 32MiB
native_transport_max_frame_size: 64MiB
native_transport_max_message_size: 32MiB
native_transport_max_request_data_in_flight_per_ip: 128MiB
native_transport_max_request_data_in_flight: 256MiB
batch_size_warn_threshold: 16MiB
batch_size_fail_threshold: 32MiB

# A small node on a small machine, under tests that run in parallel with it.
memtable_heap_space: 128MiB
concurrent_compactors: 1
read_request_timeout: 5000ms
range_request_timeout: 10000ms
write_request_timeout: 5000ms
counter_write_request_timeout: 5000ms
cas_contention_timeout: 5000ms
truncate_request_timeout: 60000ms
request_timeout: 10000ms

# One node: nothing to hint to. Tests create and drop many keyspaces: no
# snapshots on drop or truncate.
hinted_handoff_enabled: false
auto_snapshot: false
snapshot_before_compaction: false
EOF
	cat >"$CONF/logback.xml" <<EOF
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>$LOG</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.FixedWindowRollingPolicy">
      <fileNamePattern>$LOG.%i</fileNamePattern>
      <minIndex>1</minIndex>
      <maxIndex>3</maxIndex>
    </rollingPolicy>
    <triggeringPolicy class="ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy">
      <maxFileSize>20MB</maxFileSize>
    </triggeringPolicy>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
}

launch() {
	local args=(
		-Xms"$HEAP" -Xmx"$HEAP" -Xss512k
		-XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxTenuringThreshold=1
		-XX:G1RSetUpdatingPauseTimePercent=5 -XX:MaxGCPauseMillis=300
		-XX:+UseThreadPriorities -XX:+ExitOnOutOfMemoryError -XX:+PerfDisableSharedMem
		-ea -da:net.openhft...
		-Djava.net.preferIPv4Stack=true -Djdk.attach.allowAttachSelf=true
	)
	# JPMS: what Cassandra 5.0's conf/jvm17-server.options exports and opens.
	local m
	for m in java.base/jdk.internal.misc java.management.rmi/com.sun.jmx.remote.internal.rmi \
		java.rmi/sun.rmi.registry java.rmi/sun.rmi.server java.sql/java.sql java.base/java.lang.ref \
		jdk.unsupported/sun.misc jdk.compiler/com.sun.tools.javac.file jdk.attach/sun.tools.attach; do
		args+=(--add-exports "$m=ALL-UNNAMED")
	done
	for m in java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref \
		java.base/jdk.internal.reflect java.base/jdk.internal.math java.base/jdk.internal.module \
		java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal \
		java.base/sun.nio.ch java.base/java.io java.base/java.lang.reflect \
		jdk.compiler/com.sun.tools.javac java.base/java.lang java.base/java.util java.base/java.nio; do
		args+=(--add-opens "$m=ALL-UNNAMED")
	done
	args+=(
		-Dio.netty.tryReflectionSetAccessible=true
		-Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11
	)
	# jamm measures objects as a Java agent, as bin/cassandra runs it.
	local jamm=("$LIB"/jamm-*.jar)
	[[ -f ${jamm[0]} ]] && args+=("-javaagent:${jamm[0]}")
	args+=(
		-Dcassandra.config="file://$CONF/cassandra.yaml"
		-Dlogback.configurationFile="file://$CONF/logback.xml"
		-Dcassandra.logdir="$DIR" -Dcassandra.storagedir="$DATA"
		-Dcassandra.triggers_dir="$DIR/triggers"
		-Dcassandra.jmx.local.port="$JMX_PORT"
		# One node: no waiting for gossip or a ring; system tables need not be
		# fsynced (a test node's schema changes are much faster).
		-Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=0
		-Dcassandra.unsafesystem=true
		-Dcassandra-foreground=yes
		-cp "$LIB/*" org.apache.cassandra.service.CassandraDaemon
	)
	rm -f "$PIDFILE"
	printf '%q ' "$JAVA" "${args[@]}" >"$CONF/java-command" # for the curious
	LOG_START=$(stat -c %s "$LOG" 2>/dev/null) || LOG_START=0
	# setsid: the node outlives this script and the terminal or make that ran
	# it, and gets none of their signals. The shell writes its PID, which java
	# then takes over with exec. fd 9 (the start lock) is not inherited.
	# shellcheck disable=SC2016 # $$ and $@ are the inner shell's
	(cd "$DIR" && exec setsid bash -c 'echo $$ >"$0" && exec "$@"' "$PIDFILE" "$JAVA" "${args[@]}") \
		>"$OUT" 2>&1 </dev/null 9>&- &
	local _
	for _ in $(seq 50); do
		[[ -s $PIDFILE ]] && return 0
		sleep 0.1
	done
	die "the node did not start (no $PIDFILE); see $OUT"
}

# start_failed shows what this start logged (not earlier runs), without
# the JVM's warnings about Cassandra's SecurityManager, then exits 1.
start_failed() {
	local size
	size=$(stat -c %s "$LOG" 2>/dev/null) || size=0
	((size >= ${LOG_START:-0})) || LOG_START=0 # the log was rotated
	say "$1"
	tail -c +$((${LOG_START:-0} + 1)) "$LOG" 2>/dev/null >"$DIR/last-start.log" || true
	if grep -q '^ERROR' "$DIR/last-start.log"; then
		say "errors in $LOG:"
		grep -A4 '^ERROR' "$DIR/last-start.log" | tail -n 30 >&2
	fi
	say "end of $LOG:"
	tail -n 15 "$DIR/last-start.log" >&2
	rm -f "$DIR/last-start.log"
	if grep -qv -e 'SecurityManager' -e 'terminally deprecated' "$OUT" 2>/dev/null; then
		say "JVM output ($OUT):"
		grep -v -e 'SecurityManager' -e 'terminally deprecated' "$OUT" | tail -n 20 >&2
	fi
	exit 1
}

start() {
	local fresh=
	case ${1:-} in
	"") ;;
	--fresh) fresh=1 ;;
	*) die "usage: $0 start [--fresh]" ;;
	esac
	find_java
	mkdir -p "$DIR"
	# Serialise concurrent starts (e.g. two `make test` at once).
	exec 9>"$DIR.lock"
	flock 9

	if pid_alive; then
		ready || start_failed "a node from $DIR is running (PID $(cat "$PIDFILE")) but does not answer CQL on 127.0.0.1:$PORT; try: $0 stop"
		say "already running: Cassandra $RELEASE on 127.0.0.1:$PORT ($DIR)"
		return 0
	fi
	rm -f "$PIDFILE"
	tcp_open "$PORT" && die "port $PORT is taken by another process; set STRAND_CASSANDRA_PORT"
	tcp_open "$STORAGE_PORT" && die "port $STORAGE_PORT is taken by another process; set STRAND_CASSANDRA_STORAGE_PORT"
	tcp_open "$JMX_PORT" && die "port $JMX_PORT is taken by another process; set STRAND_CASSANDRA_JMX_PORT"

	fetch
	if [[ -n $fresh && -d $DATA ]]; then
		say "removing the data a previous node left in $DATA (--fresh)"
		rm -rf -- "$DATA"
	fi
	configure
	say "starting Cassandra $VERSION on 127.0.0.1:$PORT ($DIR)"
	local t0=$SECONDS
	launch
	if ! ready; then
		if pid_alive; then
			start_failed "Cassandra did not answer CQL on 127.0.0.1:$PORT within $WAIT s (it is still running; $0 stop ends it)"
		fi
		start_failed "Cassandra exited during startup"
	fi
	say "Cassandra $RELEASE is ready on 127.0.0.1:$PORT after $((SECONDS - t0)) s ($DIR)"
}

stop() {
	[[ -d $DIR ]] || { say "not running ($DIR)"; return 0; }
	exec 9>"$DIR.lock"
	flock 9
	if ! pid_alive; then
		rm -f "$PIDFILE"
		say "not running ($DIR)"
		return 0
	fi
	local pid _
	pid=$(cat "$PIDFILE")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 120); do
		if ! kill -0 "$pid" 2>/dev/null; then
			rm -f "$PIDFILE"
			say "stopped ($DIR)"
			return 0
		fi
		sleep 0.5
	done
	say "still running 60 s after SIGTERM; sending SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
	for _ in $(seq 20); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	rm -f "$PIDFILE"
	say "killed ($DIR)"
}

status() {
	if pid_alive && RELEASE=$(cql_probe); then
		echo "Cassandra $RELEASE is answering CQL on 127.0.0.1:$PORT ($DIR)"
	else
		echo "Cassandra is not running on 127.0.0.1:$PORT ($DIR)"
		return 1
	fi
}

install() {
	find_java
	mkdir -p "$DIR"
	exec 9>"$DIR.lock"
	flock 9
	fetch
}

case ${1:-} in
install) install ;;
start) start "${2:-}" ;;
stop) stop ;;
status) status ;;
url) echo "127.0.0.1:$PORT" ;;
*) die "usage: $0 install|start [--fresh]|stop|status|url" ;;
esac
