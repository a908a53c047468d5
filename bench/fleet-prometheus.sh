#!/usr/bin/env bash
# A day of a fleet read from Prometheus and checked: `inferlint report --prometheus` over
# a 24 h window of 8 replicas scraped every second, against its anchors in the same run.
#
# The history is served twice:
# - by the stand-in Prometheus (`inferlint-sim prometheus`, which answers the query API
#   from a simulated history and refuses, as Prometheus does, a range query of more than
#   11,000 points per series), each replica's instant answers also holding the rest of a
#   real vLLM page (fixtures/real/vllm-0.32-cpu/healthy-vllm-bench/after.snapshot.json),
#   so that the snapshots are the size a real engine's are;
# - by a real Prometheus (`/usr/bin/prometheus`), the same history written as OpenMetrics
#   by the stand-in and made into blocks by `promtool tsdb create-blocks-from
#   openmetrics`, where both are installed and the history is small enough to backfill
#   (at most 50 million samples; REAL=0 skips it).
#
# Against each server, in the same run: inferlint's whole command under /usr/bin/time;
# curl fetching the very answers inferlint asked for (the stand-in logs each request;
# curl asks them again, in order, on one connection, writing them to files); and
# Python's json.load of those files. Prints each one's time and peak memory, and
# inferlint's as ratios to them. The servers run in their own processes, so their memory
# is not in the numbers, and their time only as far as curl's fetch pays it too.
#
# Usage: bench/fleet-prometheus.sh [REPLICAS] [HOURS] [INTERVAL_MS]   (default 8 24 1000)
# INFERLINT_BIN=path measures another build of inferlint (an older one, for a before and
# after) against the same servers. Builds release binaries first. Everything it starts is
# stopped, by PID, on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
replicas=${1:-8}
hours=${2:-24}
interval_ms=${3:-1000}
cargo build --release -q -p inferlint-cli -p inferlint-sim
bin=target/release
inferlint=${INFERLINT_BIN:-$bin/inferlint}
page=fixtures/real/vllm-0.32-cpu/healthy-vllm-bench/after.snapshot.json
. bench/lib.sh

start_ms=1764547200000
steps=$((hours * 3600 * 1000 / interval_ms))
start=$((start_ms / 1000))
end=$(( (start_ms + (steps - 1) * interval_ms) / 1000 ))
history=(--replicas "$replicas" --steps "$steps" --interval-ms "$interval_ms"
  --start-ms "$start_ms" --imbalanced --page "$page")
timing='%e %M %U %S'

ratio() { python3 -c "import sys; print(f'{float(sys.argv[1]) / max(float(sys.argv[2]), 0.01):.2f}')" "$1" "$2"; }
mib() { echo $(( $1 / 1024 )); }

# measure NAME URL: inferlint against URL, then curl's fetch of the answers it asked of
# the stand-in (the paths it logged) and Python's json.load of them.
measure() {
  local name=$1 url=$2 out=$work/$1
  mkdir "$out" "$out/answers"
  set +e
  /usr/bin/time -f "$timing" -o "$out/time.txt" \
    "$inferlint" report --prometheus "$url" --start "$start" --end "$end" \
    -o "$out/fleet.html" >"$out/out.txt" 2>"$out/err.txt"
  local code=$?
  set -e
  local t_ours m_ours u_ours s_ours t_curl m_curl t_py m_py
  read -r t_ours m_ours u_ours s_ours < <(tail -n 1 "$out/time.txt")
  # What inferlint asked of the stand-in, before curl's requests join the log.
  [ -f "$work/asked" ] || cp "$work/queries" "$work/asked"
  local n=0
  : >"$out/curl.cfg"
  while read -r path; do
    n=$((n + 1))
    printf 'url = "%s%s"\noutput = "%s/answers/%05d.json"\n' "$url" "$path" "$out" "$n" >>"$out/curl.cfg"
  done <"$work/asked"
  /usr/bin/time -f "$timing" -o "$out/curl.txt" curl -s --fail-with-body -K "$out/curl.cfg"
  read -r t_curl m_curl _ _ < <(tail -n 1 "$out/curl.txt")
  local bytes
  bytes=$(cat "$out"/answers/*.json | wc -c)
  /usr/bin/time -f "$timing" -o "$out/python.txt" python3 -c '
import json, sys
for name in sys.argv[1:]:
    with open(name) as f:
        json.load(f)
' "$out"/answers/*.json
  read -r t_py m_py _ _ < <(tail -n 1 "$out/python.txt")
  echo "$name: report --prometheus, $replicas replicas, $hours h at ${interval_ms} ms (exit $code)"
  grep '^read ' "$out/err.txt" | sed 's/^/  /' || true
  echo "  answers: $n, $((bytes / 1048576)) MiB in all"
  echo "  inferlint:        ${t_ours} s (${u_ours} s user, ${s_ours} s system), $(mib "$m_ours") MiB peak"
  echo "  curl fetch:       ${t_curl} s, $(mib "$m_curl") MiB peak"
  echo "  python json.load: ${t_py} s, $(mib "$m_py") MiB peak"
  echo "  time: $(ratio "$t_ours" "$t_curl")x curl's fetch, $(ratio "$t_ours" "$t_py")x Python's json.load"
  echo "  peak memory: $(ratio "$m_ours" "$m_py")x Python's json.load"
  tail -n 1 "$out/out.txt" | sed 's/ -> .*//; s/^/  /'
  grep -m1 'T22' "$out/out.txt" | sed 's/^/  /' || true
  if [ "$code" -gt 2 ]; then sed 's/^/  stderr: /' "$out/err.txt"; fi
}

# The stand-in, which logs the requests inferlint makes.
"$bin/inferlint-sim" prometheus "${history[@]}" --query-log "$work/queries" >"$work/url" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.05; done
url=$(cat "$work/url")
measure stand-in "$url"
kill "${pids[-1]}" 2>/dev/null || true

# A real Prometheus holding the same history.
samples=$((replicas * 7 * steps))
if [ "${REAL:-1}" != 0 ] && command -v prometheus >/dev/null && command -v promtool >/dev/null \
  && [ "$samples" -le 50000000 ]; then
  "$bin/inferlint-sim" prometheus "${history[@]}" --openmetrics "$work/history.om"
  promtool tsdb create-blocks-from openmetrics -q "$work/history.om" "$work/tsdb" >/dev/null
  rm "$work/history.om"
  printf 'global:\n  scrape_interval: 1m\n' >"$work/prometheus.yml"
  port=$(free_port)
  # Blocks of 2 h, as promtool makes them, are never compacted while the numbers are taken.
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --storage.tsdb.retention.time=100y --storage.tsdb.min-block-duration=2h \
    --storage.tsdb.max-block-duration=2h --web.listen-address="127.0.0.1:$port" \
    >"$work/prometheus.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do
    curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1 && break
    sleep 0.1
  done
  # The requests inferlint makes of the real server are the ones it made of the stand-in
  # (the same window, selector and series): curl asks those.
  measure prometheus "http://127.0.0.1:$port"
else
  echo "prometheus: skipped (REAL=0, no prometheus or promtool, or $samples samples to backfill)"
fi
