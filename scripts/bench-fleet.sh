#!/usr/bin/env bash
# Measures what the shared store's defaults rest on, against real
# redis-servers started on free loopback ports and stopped on exit.
#
# 1. GET latency on a loaded host: redis-benchmark makes GETs of a 160-byte
#    value (a sealed token's size) over 16 connections (16 replicas) while
#    LOAD busy loops (default: one per core) compete for the CPUs, and the
#    p99.9 is printed (33 to 64 ms on a 2-core host with a load average of
#    10). What a replica sees of the store on a busy host, its own CPU's
#    delays included, is longer: the harness (3) prints it, and
#    Config.SharedStoreTimeout's default, 200 ms, rests on that (see
#    defaultSharedStoreTimeout in store.go).
# 2. The fleet benchmarks of redisstore: 16 replicas (each its own Client and
#    Authenticator) against one managementtest server, with and without the
#    shared store, reporting token requests per token lifetime and
#    authenticate calls per distinct End User token; and the cost of a
#    verdict read from the in-process cache and from Redis.
# 3. The fleet on a bad day (harness): FLEET_REPLICAS replica processes
#    (default 16) under a steady load (40 Users.Get and 75 checks a second
#    each, 2 s deadlines, 60 End User tokens of which 10 were never issued,
#    management tokens living 3 s, CacheTTL 4 s, the SDK's defaults
#    otherwise) against one redis-server through phases: calm, hang
#    (SIGSTOP for FLEET_PHASE, default 8 s), squat (every lease held by
#    someone else), dead leases (values deleted and their leases left, every
#    2 s), kill (SIGKILL, restarted empty); or against a Cluster of 3
#    masters and 3 replicas whose master holding the token is SIGKILLed. It
#    prints a table per phase: failed calls, p50/p99/max latency of the calls
#    started in it, calls over 600 ms (and the most on one replica), token
#    requests, authenticate calls and store operations, and what the fleet
#    shares (the most token requests in one refresh interval, authenticate
#    calls per End User token per CacheTTL). Mode auth is the service's
#    outage instead: the authenticate endpoint hung for FLEET_AUTH_OUTAGE
#    (default 20 s) with StaleIfError 1 min and CacheTTL 2 s, 5 tokens
#    revoked and forgotten as it starts; it counts the confirmed End Users
#    refused, the never-issued tokens' p99 once the breaker is open, the
#    revoked tokens let through and the authenticate calls at once. See
#    redisstore/harness_test.go; FLEET_SST and FLEET_CTX_TIMEOUT=0 change
#    the SDK's and go-redis's settings, FLEET_PHASES=none runs the calm
#    phase alone. About 90 s (cluster: 45 s, auth: 60 s). LOAD=N runs N
#    CPU-burning loops beside it (LOAD=4 on 2 cores: a busy node; default
#    0), each ended after LOAD_SECONDS (default 300) whatever happens.
#
#   bash scripts/bench-fleet.sh                # 1 and 2
#   bash scripts/bench-fleet.sh latency        # 1 only; RUNS=5 LOAD=2 REQUESTS=200000
#   BENCHTIME=1000x bash scripts/bench-fleet.sh fleet
#   bash scripts/bench-fleet.sh harness        # 3, one server; harness cluster: the Cluster
#   LOAD=4 bash scripts/bench-fleet.sh harness auth
#   LOAD=4 FLEET_REPLICAS=32 FLEET_PHASES=none bash scripts/bench-fleet.sh harness
#
# Needs redis-server, redis-cli and redis-benchmark on PATH (Debian:
# apt-get install redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

latency() {
	local port load=${LOAD:-$(nproc)} runs=${RUNS:-5} n=${REQUESTS:-200000}
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null &
	pids+=($!)
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
	for _ in $(seq "$load"); do
		sh -c 'while :; do :; done' &
		pids+=($!)
	done
	echo "GET of 160 bytes, 16 connections, $load busy loops on $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg):"
	for run in $(seq "$runs"); do
		# The first percentile line at or past 99.9% bounds the p99.9.
		redis-benchmark -p "$port" -t get -n "$n" -c 16 -d 160 2>/dev/null |
			awk -v run="$run" '/percentile distribution/ {on = 1; next}
				on && $1 + 0 >= 99.9 { printf "  run %d: p%s %s ms\n", run, substr($1, 1, length($1) - 1), $3; exit }'
	done
}

fleet() {
	(cd redisstore && GOWORK=off go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-200x}" .)
}

# burn starts n CPU-burning loops, each ended after secs seconds at most.
burn() {
	local n=$1 secs=$2
	for _ in $(seq "$n"); do
		timeout "$secs" sh -c 'while :; do :; done' &
		pids+=($!)
	done
}

harness() {
	# Built first, so that the loops burn beside the fleet, not the compiler.
	local dir
	dir=$(mktemp -d)
	(cd redisstore && GOWORK=off go test -c -o "$dir/redisstore.test" .)
	burn "${LOAD:-0}" "${LOAD_SECONDS:-300}"
	(cd redisstore && MANAGEMENT_FLEET_HARNESS=${1:-single} "$dir/redisstore.test" -test.run '^TestFleetHarness$' -test.v -test.timeout 0 -test.count=1)
	rm -r "$dir"
}

case $what in
latency) latency ;;
fleet) fleet ;;
harness) harness "${2:-single}" ;;
*) latency && cleanup && pids=() && fleet ;;
esac
