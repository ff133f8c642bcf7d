#!/usr/bin/env bash
# scripts/bench-cluster.sh — `strand bench` against 1, 2 and 3 nodes over one
# PostgreSQL database (the private test server; started if needed).
#
#   scripts/bench-cluster.sh [WORKFLOWS_PER_SHAPE] [SHAPES]
#
# Each node count gets a new database with 12 shards; the nodes run on
# loopback ports 18301-18303, and the bench runs a worker and a client per
# node in its own process, each given every node (its own first). The raw commit rate of the same database is
# printed beside each run: compare the ratios, not the absolute numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-500}
shapes=${2:-sequential,single}

scripts/postgres.sh status 2>/dev/null || scripts/postgres.sh start
base=$(scripts/postgres.sh url)
psql=$(ls -d /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -n1)
[[ -x $psql ]] || { echo "bench-cluster.sh: psql not found" >&2; exit 1; }
tmp=$(mktemp -d)
cleanup() {
	kill $(jobs -p) 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/strand" ./cmd/strand

for nodes in 1 2 3; do
	db=strand_bench_cluster_$nodes
	PGOPTIONS="-c client_min_messages=warning" "$psql" "$base" -q -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
	url=${base/\/postgres\?//$db?}
	"$tmp/strand" migrate --store "$url" >/dev/null
	urls=()
	pids=()
	for i in $(seq 1 "$nodes"); do
		port=$((18300 + i))
		"$tmp/strand" server --store "$url" --listen "127.0.0.1:$port" --node-id "n$i" --shards 12 >"$tmp/n$i.log" 2>&1 &
		pids+=($!)
		urls+=("http://127.0.0.1:$port")
	done
	for u in "${urls[@]}"; do
		for _ in $(seq 1 300); do
			curl -fs "$u/readyz" >/dev/null 2>&1 && break
			sleep 0.1
		done
	done
	sleep 1 # let the last handovers settle
	echo "== $nodes node(s)"
	"$tmp/strand" bench --quiet --n "$n" --shapes "$shapes" --store "$url" --server "$(IFS=,; echo "${urls[*]}")"
	kill -INT "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null || true
	"$psql" "$base" -q -c "DROP DATABASE $db"
done
