#!/usr/bin/env bash
# Runs the fleet benchmarks of redisstore against a real redis-server that
# the benchmarks start on a free loopback port: 16 replicas (each its own
# Client and Authenticator) against one managementtest server, with and
# without the shared store, reporting token requests per token lifetime and
# authenticate calls per distinct End User token; and the cost of a verdict
# read from the in-process cache and from Redis.
#
#   bash scripts/bench-fleet.sh               # 200 rounds each
#   BENCHTIME=1000x bash scripts/bench-fleet.sh
#
# Needs redis-server on PATH (Debian: apt-get install redis-server).
set -euo pipefail
cd "$(dirname "$0")/../redisstore"
GOWORK=off go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-200x}" .
