#!/usr/bin/env bash
# scripts/cassandra.sh — a private single-node Apache Cassandra for strand's tests.
#
#   scripts/cassandra.sh start    fetch Cassandra with Maven if needed, configure, start
#   scripts/cassandra.sh stop     stop it
#   scripts/cassandra.sh status   exit 0 if it accepts CQL connections
#   scripts/cassandra.sh url      print its contact point (host:port)
#
# Cassandra (org.apache.cassandra:cassandra-all) and its dependencies are
# fetched with Maven into $STRAND_CASSANDRA_DIR/lib (default
# ~/.cache/strand/cassandra, or /var/lib/strand/cassandra as root); the node
# listens for CQL on 127.0.0.1:${STRAND_CASSANDRA_PORT:-19042}, never on the
# default 9042, with a small heap. Needs java (17) and mvn on PATH.
set -euo pipefail

VERSION=${STRAND_CASSANDRA_VERSION:-5.0.6}
PORT=${STRAND_CASSANDRA_PORT:-19042}
STORAGE_PORT=${STRAND_CASSANDRA_STORAGE_PORT:-17000}
JMX_PORT=${STRAND_CASSANDRA_JMX_PORT:-17199}
HEAP=${STRAND_CASSANDRA_HEAP:-1G}
if [[ $EUID -eq 0 ]]; then
	DIR=${STRAND_CASSANDRA_DIR:-/var/lib/strand/cassandra}
else
	DIR=${STRAND_CASSANDRA_DIR:-$HOME/.cache/strand/cassandra}
fi
LIB=$DIR/lib-$VERSION
CONF=$DIR/conf
DATA=$DIR/data
LOG=$DIR/cassandra.log
PIDFILE=$DIR/cassandra.pid

say() { echo "cassandra.sh: $*" >&2; }
die() { say "$*"; exit 1; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }
pid_alive() {
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null) && [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
		grep -q CassandraDaemon "/proc/$pid/cmdline" 2>/dev/null
}

fetch() {
	[[ -f $LIB/.complete ]] && return
	command -v mvn >/dev/null || die "mvn not found: install Maven (apt-get install maven)"
	say "fetching Apache Cassandra $VERSION and its dependencies with Maven into $LIB..."
	local work
	work=$(mktemp -d)
	cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>strand.test</groupId><artifactId>cassandra-fetch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId><version>$VERSION</version></dependency>
  </dependencies>
</project>
EOF
	rm -rf "$LIB"
	if ! (cd "$work" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIB" >"$work/mvn.log" 2>&1); then
		tail -n 30 "$work/mvn.log" >&2
		rm -rf "$work"
		die "Maven could not fetch org.apache.cassandra:cassandra-all:$VERSION"
	fi
	rm -rf "$work"
	touch "$LIB/.complete"
}

configure() {
	mkdir -p "$CONF" "$DATA"
	cat >"$CONF/cassandra.yaml" <<EOF
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
native_transport_port: $PORT
start_native_transport: true
data_file_directories: [$DATA/data]
commitlog_directory: $DATA/commitlog
saved_caches_directory: $DATA/saved_caches
hints_directory: $DATA/hints
cdc_raw_directory: $DATA/cdc_raw
# Durable acknowledgements on one node: group the commit-log fsyncs.
commitlog_sync: periodic
commitlog_sync_period: 10000ms
# Paxos v2: fewer round trips per lightweight transaction (Strand's every
# commit is one).
paxos_variant: v1
# Room for Strand's largest batch (12 MiB): a mutation may be half a segment.
commitlog_segment_size: 64MiB
native_transport_max_frame_size: 64MiB
batch_size_warn_threshold: 16MiB
batch_size_fail_threshold: 32MiB
authenticator: AllowAllAuthenticator
authorizer: AllowAllAuthorizer
# Tests create and drop many keyspaces: no snapshots on drop or truncate.
auto_snapshot: false
memtable_heap_space: 128MiB
concurrent_compactors: 1
EOF
	cat >"$CONF/logback.xml" <<EOF
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>$DIR/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
}

start() {
	command -v java >/dev/null || die "java not found: install a JDK 17 (apt-get install openjdk-17-jdk-headless)"
	mkdir -p "$DIR"
	exec 9>"$DIR.lock"
	flock 9
	if pid_alive && port_open; then
		say "already running on 127.0.0.1:$PORT ($DIR)"
		return 0
	fi
	pid_alive && die "a node from $DIR runs but does not accept CQL on $PORT; see $DIR/system.log or run: $0 stop"
	port_open && die "port $PORT is taken by another process; set STRAND_CASSANDRA_PORT"
	fetch
	configure
	say "starting Cassandra $VERSION on 127.0.0.1:$PORT ($DIR)"
	local opens=()
	for m in java.base/jdk.internal.misc java.base/jdk.internal.ref java.base/sun.nio.ch \
		java.management.rmi/com.sun.jmx.remote.internal.rmi java.rmi/sun.rmi.registry \
		java.rmi/sun.rmi.server java.sql/java.sql java.base/java.lang.ref jdk.unsupported/sun.misc; do
		opens+=(--add-exports "$m=ALL-UNNAMED")
	done
	for m in java.base/java.lang.module java.base/jdk.internal.loader java.base/jdk.internal.ref \
		java.base/jdk.internal.reflect java.base/jdk.internal.math java.base/jdk.internal.module \
		java.base/jdk.internal.util.jar jdk.management/com.sun.management.internal java.base/sun.nio.ch \
		java.base/java.io java.base/java.nio java.base/java.util.concurrent java.base/java.util \
		java.base/java.util.concurrent.atomic java.base/java.lang java.base/java.math \
		java.base/java.lang.reflect java.base/java.net; do
		opens+=(--add-opens "$m=ALL-UNNAMED")
	done
	# setsid: the node outlives this script and the shell that ran it; fd 9
	# (the start lock) is not inherited.
	setsid java -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -Xss512k \
		-Djdk.attach.allowAttachSelf=true "${opens[@]}" \
		-Dcassandra.config="file://$CONF/cassandra.yaml" \
		-Dlogback.configurationFile="file://$CONF/logback.xml" \
		-Dcassandra.logdir="$DIR" -Dcassandra.storagedir="$DATA" \
		-Dcassandra.jmx.local.port="$JMX_PORT" \
		-Dcassandra.skip_wait_for_gossip_to_settle=0 -Dcassandra.ring_delay_ms=0 \
		-Dcassandra-foreground=yes \
		-cp "$LIB/*" org.apache.cassandra.service.CassandraDaemon \
		>"$LOG" 2>&1 9>&- </dev/null &
	echo $! >"$PIDFILE"
	for _ in $(seq 240); do
		if port_open; then
			say "ready on 127.0.0.1:$PORT"
			return 0
		fi
		pid_alive || break
		sleep 0.5
	done
	say "Cassandra did not start accepting CQL on 127.0.0.1:$PORT; end of its logs:"
	tail -n 30 "$LOG" >&2 || true
	tail -n 30 "$DIR/system.log" >&2 2>/dev/null || true
	exit 1
}

stop() {
	if ! pid_alive; then
		say "not running ($DIR)"
		return 0
	fi
	local pid
	pid=$(cat "$PIDFILE")
	kill "$pid"
	for _ in $(seq 60); do
		kill -0 "$pid" 2>/dev/null || { say "stopped ($DIR)"; rm -f "$PIDFILE"; return 0; }
		sleep 0.5
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$PIDFILE"
	say "killed ($DIR)"
}

status() {
	if pid_alive && port_open; then
		echo "Cassandra is accepting CQL connections on 127.0.0.1:$PORT ($DIR)"
	else
		echo "Cassandra is not running on 127.0.0.1:$PORT ($DIR)"
		return 1
	fi
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
url) echo "127.0.0.1:$PORT" ;;
*) die "usage: $0 start|stop|status|url" ;;
esac
