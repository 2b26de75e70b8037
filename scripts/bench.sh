#!/usr/bin/env bash
# Runs the SDK-against-baseline benchmarks of internal/benchmark and prints
# them side by side with benchstat: one column per implementation, the
# baseline first, so the SDK column's "vs base" is its difference from the
# baseline; a last table gives the ratios of the medians.
#
#   bash scripts/bench.sh                       # every benchmark, 6 rounds
#   COUNT=10 bash scripts/bench.sh              # more rounds, steadier medians
#   BENCH=UsersGet bash scripts/bench.sh        # one benchmark
#   BENCH_LARGE=1 bash scripts/bench.sh         # also range over 100 000 Users
#   BENCH='AuthenticatorCheck|CheckFloor' bash scripts/bench.sh   # the Check ratios alone
#   bash scripts/bench.sh -test.cpu 1           # extra flags go to the test binary
#
# The rounds run the whole suite one after the other (rather than go test
# -count, which repeats each benchmark back to back), so that a burst of
# load on the machine hits both implementations alike.
#
# Environment: COUNT (rounds, default 6), BENCH (a -bench pattern, default
# .), BENCHTIME (default 1s), SETTLE (seconds between rounds, default 3), OUT (where the raw output is saved; default a
# new file under ${TMPDIR:-/tmp}). benchstat is fetched at a pinned version
# by `go run`; it is not a dependency of the module.
set -euo pipefail
cd "$(dirname "$0")/.."

benchstat=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
count=${COUNT:-6}
pattern=${BENCH:-.}
benchtime=${BENCHTIME:-1s}
out=${OUT:-$(mktemp "${TMPDIR:-/tmp}/management-bench.XXXXXX")}
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT

go test -c -o "$bindir/benchmark.test" ./internal/benchmark/
: >"$out"
for round in $(seq "$count"); do
	# Odd rounds run the SDK first, even ones the baseline (runImpls in
	# internal/benchmark): what runs first meets what the previous round
	# left behind.
	baseline_first=$((1 - round % 2))
	echo "round $round of $count: -bench '$pattern' -benchtime $benchtime $* (baseline first: $baseline_first)" >&2
	# In the package's directory, as go test runs it: the benchmarks read testdata/.
	(cd internal/benchmark && BENCH_BASELINE_FIRST=$baseline_first "$bindir/benchmark.test" -test.run '^$' -test.bench "$pattern" \
		-test.benchtime "$benchtime" -test.benchmem "$@") | tee -a "$out"
	sleep "${SETTLE:-3}" # let the kernel close the round's thousands of connections
done
echo "raw output saved in $out" >&2
echo
go run "$benchstat" -col '/impl@(baseline sdk)' "$out"

# The same medians as plain ratios, SDK over baseline, one line per
# benchmark and unit.
echo
echo "SDK / baseline (medians of $count rounds)"
go run "$benchstat" -format csv -col '/impl@(baseline sdk)' "$out" 2>/dev/null | awk -F, '
	$1 == "" && $2 != "" && $2 != "baseline" { unit = $2; next }
	unit == "" || $1 == "" || $1 == "geomean" || NF < 4 { next }
	!printed++ { printf "%-52s %-14s %14s %14s %8s\n", "benchmark", "unit", "baseline", "sdk", "ratio" }
	{
		ratio = ($2 + 0 != 0 && $4 != "") ? sprintf("%.3f", $4 / $2) : "-"
		printf "%-52s %-14s %14.6g %14.6g %8s\n", $1, unit, $2, $4, ratio
	}'

# The median of the rounds' own ratios: each round's SDK time over the same
# round's baseline time, run minutes apart at most. On a shared machine
# whose speed drifts from round to round, this is steadier than the ratio
# of the two columns' medians above.
echo
echo "SDK / baseline, time: median of the $count rounds' own ratios"
awk '
	$1 ~ /^Benchmark/ && $1 ~ /\/impl=(sdk|baseline)/ && $4 == "ns/op" {
		key = $1; sub(/\/impl=(sdk|baseline)/, "", key)
		impl = ($1 ~ /\/impl=sdk/) ? "sdk" : "baseline"
		n = ++seen[key, impl]
		t[key, impl, n] = $3
		if (!(key in order)) { order[key] = ++keys; name[keys] = key }
	}
	END {
		printf "%-52s %8s %8s  %s\n", "benchmark", "median", "rounds", "ratios, sorted"
		for (k = 1; k <= keys; k++) {
			key = name[k]; m = 0
			for (i = 1; i <= seen[key, "sdk"] && i <= seen[key, "baseline"]; i++) {
				r[++m] = t[key, "sdk", i] / t[key, "baseline", i]
			}
			for (i = 2; i <= m; i++) { # insertion sort: awk has none built in
				v = r[i]
				for (j = i - 1; j >= 1 && r[j] > v; j--) r[j + 1] = r[j]
				r[j + 1] = v
			}
			if (m == 0) continue
			med = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
			list = ""
			for (i = 1; i <= m; i++) list = list sprintf(" %.3f", r[i])
			printf "%-52s %8.3f %8d  %s\n", key, med, m, list
		}
	}' "$out"

# A cached Authenticator.Check against its floor, BenchmarkCheckFloor (the
# header's SHA-256 and one map lookup), round by round (issue 22: at most
# 2x).
echo
echo "cached Check / floor (SHA-256 + map lookup), time: median of the rounds' own ratios"
awk '
	$1 ~ /^BenchmarkAuthenticatorCheck\/cache=on\/impl=sdk/ { c[++nc] = $3 }
	$1 ~ /^BenchmarkCheckFloor/ { f[++nf] = $3 }
	END {
		m = 0
		for (i = 1; i <= nc && i <= nf; i++) if (f[i] + 0 != 0) r[++m] = c[i] / f[i]
		if (m == 0) { print "(not run: BENCH matched neither AuthenticatorCheck/cache=on nor CheckFloor)"; exit }
		for (i = 2; i <= m; i++) {
			v = r[i]
			for (j = i - 1; j >= 1 && r[j] > v; j--) r[j + 1] = r[j]
			r[j + 1] = v
		}
		med = (m % 2) ? r[(m + 1) / 2] : (r[m / 2] + r[m / 2 + 1]) / 2
		list = ""
		for (i = 1; i <= m; i++) list = list sprintf(" %.3f", r[i])
		printf "%-52s %8.3f %8d  %s\n", "AuthenticatorCheck/cache=on vs CheckFloor", med, m, list
	}' "$out"
