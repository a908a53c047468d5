#!/usr/bin/env bash
# A day of a fleet read from Prometheus and checked: `inferlint report --prometheus` over
# a 24 h window of 8 replicas scraped every second, served by the stand-in Prometheus
# (`inferlint-sim prometheus`, which answers the query API from a simulated history and
# refuses, as Prometheus does, a range query of more than 11,000 points per series).
# Prints the time and peak memory of the whole command (/usr/bin/time), the range queries
# it asked and the most points one of them asked of a series, and the verdicts' count
# line. The stand-in runs in its own process, so its cost is not in the numbers.
# Usage: bench/fleet-prometheus.sh [REPLICAS] [HOURS] [INTERVAL_MS]   (default 8 24 1000)
# Builds release binaries first. Everything it starts is stopped, by PID, on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
replicas=${1:-8}
hours=${2:-24}
interval_ms=${3:-1000}
cargo build --release -q -p inferlint-cli -p inferlint-sim
bin=target/release
. bench/lib.sh

start_ms=1764547200000
steps=$((hours * 3600 * 1000 / interval_ms))
"$bin/inferlint-sim" prometheus --replicas "$replicas" --steps "$steps" \
  --interval-ms "$interval_ms" --start-ms "$start_ms" --imbalanced >"$work/url" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
url=$(cat "$work/url")
start=$((start_ms / 1000))
end=$(( (start_ms + (steps - 1) * interval_ms) / 1000 ))
set +e
/usr/bin/time -f '%e s elapsed, %M KiB peak resident, %U s user, %S s system' -o "$work/time.txt" \
  "$bin/inferlint" report --prometheus "$url" --start "$start" --end "$end" \
  -o "$work/fleet.html" >"$work/out.txt" 2>"$work/err.txt"
code=$?
set -e
echo "report --prometheus: $replicas replicas, $hours h at ${interval_ms} ms (exit $code)"
grep '^read ' "$work/err.txt" | sed 's/^/  /'
echo "  $(tail -n 1 "$work/time.txt")"
tail -n 1 "$work/out.txt" | sed 's/ -> .*//; s/^/  /'
grep -m1 'T22' "$work/out.txt" | sed 's/^/  /'
