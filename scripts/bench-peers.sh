#!/usr/bin/env bash
# Runs the peer benchmarks of internal/benchmark/peers (the SDK, the client
# oapi-codegen generates with x/oauth2, and a hand-written net/http client,
# on one loopback server) in interleaved rounds, and prints the ratios
# between the columns: for each benchmark and unit, the median of the
# rounds' own ratios and their spread (lowest and highest), then benchstat's
# table of the columns.
#
#   bash scripts/bench-peers.sh                    # every benchmark, 10 rounds
#   COUNT=20 bash scripts/bench-peers.sh           # more rounds
#   BENCH=UsersGet bash scripts/bench-peers.sh     # one benchmark
#   bash scripts/bench-peers.sh -test.short        # 10 000 Users instead of 100 000
#
# Each round runs every benchmark once per column, the columns in an order
# rotated from round to round (PEER_ORDER), so that a burst of load on the
# machine, or what the previous column left behind, hits each alike. A
# round's ratio compares columns measured seconds apart; on a shared machine
# whose speed drifts, the median of those is steadier than the ratio of
# the columns' medians.
#
# Environment: COUNT (rounds, default 10), BENCH (a -bench pattern, default
# .), BENCHTIME (default 1s), SETTLE (seconds between rounds, default 3),
# OUT (where the raw output is saved; default a new file under
# ${TMPDIR:-/tmp}). benchstat is fetched at a pinned version by `go run`.
set -euo pipefail
cd "$(dirname "$0")/.."

benchstat=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
count=${COUNT:-10}
pattern=${BENCH:-.}
benchtime=${BENCHTIME:-1s}
out=${OUT:-$(mktemp "${TMPDIR:-/tmp}/management-bench-peers.XXXXXX")}
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT

(cd internal/benchmark/peers && GOWORK=off go test -c -o "$bindir/peers.test" .)
orders=(sdk,generated,raw generated,raw,sdk raw,sdk,generated)
: >"$out"
for round in $(seq "$count"); do
	order=${orders[$(((round - 1) % 3))]}
	echo "round $round of $count: -bench '$pattern' -benchtime $benchtime $* (order $order)" >&2
	(cd internal/benchmark/peers && PEER_ORDER=$order "$bindir/peers.test" -test.run '^$' \
		-test.bench "$pattern" -test.benchtime "$benchtime" -test.benchmem "$@") | tee -a "$out"
	sleep "${SETTLE:-3}" # let the kernel close the round's thousands of connections
done
echo "raw output saved in $out" >&2

echo
echo "Ratios between the columns: median of the $count rounds' own ratios [lowest highest]"
awk '
	$1 ~ /^Benchmark/ && match($1, /\/client=[a-z]+(-prefetch)?/) {
		client = substr($1, RSTART + 8, RLENGTH - 8)
		key = $1; sub(/\/client=[a-z]+(-prefetch)?/, "", key); sub(/-[0-9]+$/, "", key); sub(/^Benchmark/, "", key)
		if (!(key in seenKey)) { seenKey[key] = 1; keys[++nkeys] = key }
		for (i = 3; i < NF; i += 2) {
			unit = $(i + 1)
			if (!((key, unit) in seenUnit)) { seenUnit[key, unit] = 1; units[key, ++nunits[key]] = unit }
			v[key, unit, client, ++n[key, unit, client]] = $i
		}
	}
	function stat(key, unit, a, b,    m, i, j, x, r, med) {
		m = 0
		for (i = 1; i <= n[key, unit, a] && i <= n[key, unit, b]; i++) {
			if (v[key, unit, b, i] + 0 == 0) continue
			r[++m] = v[key, unit, a, i] / v[key, unit, b, i]
		}
		if (m == 0) return "-"
		for (i = 2; i <= m; i++) { # insertion sort: awk has none built in
			x = r[i]
			for (j = i - 1; j >= 1 && r[j] > x; j--) r[j + 1] = r[j]
			r[j + 1] = x
		}
		med = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
		return sprintf("%.2f [%.2f %.2f]", med, r[1], r[m])
	}
	END {
		printf "%-34s %-13s %-18s %-18s %-18s %s\n", "benchmark", "unit", "sdk/raw", "generated/raw", "sdk/generated", "sdk-prefetch/raw"
		for (k = 1; k <= nkeys; k++) {
			key = keys[k]
			for (u = 1; u <= nunits[key]; u++) {
				unit = units[key, u]
				if (unit == "failures/op") continue
				printf "%-34s %-13s %-18s %-18s %-18s %s\n", key, unit, stat(key, unit, "sdk", "raw"),
					stat(key, unit, "generated", "raw"), stat(key, unit, "sdk", "generated"),
					stat(key, unit, "sdk-prefetch", "raw")
			}
		}
	}' "$out"

echo
go run "$benchstat" -col '/client@(raw generated sdk sdk-prefetch)' "$out"
