#!/usr/bin/env bash
# How many servers one `inferlint watch URL URL …` records on one schedule: for each
# count N, N simulated vLLM servers (inferlint-sim serve, real speed) with a benchmark
# load looping on the first, then `watch` of all N at --interval (default 0.25 s, 4 Hz)
# for SECONDS under /usr/bin/time, then each replica's series measured against its
# schedule (examples/schedule_stats): the worst drift and the worst p99 distance over
# the replicas, the gap records, and the recorder's CPU.
# Usage: bench/fleet-watch.sh [SECONDS] [INTERVAL] [COUNTS...]   (default 30 0.25 1 4 8 16 32 64)
# Builds release binaries first. Everything it starts is stopped, by PID, on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
interval=${2:-0.25}
shift $(( $# > 2 ? 2 : $# ))
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(1 4 8 16 32 64)
cargo build --release -q -p inferlint-cli -p inferlint-sim
cargo build --release -q -p inferlint-live --example schedule_stats
bin=target/release
. bench/lib.sh

printf '%-6s %-10s %-6s %-14s %-12s %-10s\n' servers samples gaps "worst drift" "worst p99" "CPU"
for n in "${counts[@]}"; do
  urls=()
  server_pids=()
  for _ in $(seq "$n"); do
    port=$(free_port)
    "$bin/inferlint-sim" serve --engine vllm --port "$port" --speed 1 >/dev/null 2>&1 &
    server_pids+=($!); pids+=($!)
    urls+=("http://127.0.0.1:$port")
  done
  for u in "${urls[@]}"; do
    for _ in $(seq 100); do curl -sf "$u/health" >/dev/null && break; sleep 0.05; done
  done
  ( end=$((SECONDS + secs + 3)); while [ $SECONDS -lt $end ]; do
      "$bin/inferlint-sim" load "${urls[0]}" --num-prompts 64 --max-concurrency 16 \
        --output-len 64 --timeout 120 >/dev/null 2>&1 || true; done ) &
  load_pid=$!; pids+=($load_pid)
  out="$work/fleet-$n"
  # Through --targets, so that one server is recorded as a fleet of one, like the others.
  printf '%s\n' "${urls[@]}" >"$work/targets-$n.txt"
  /usr/bin/time -f '%U %S %e' -o "$work/time-$n.txt" \
    "$bin/inferlint" watch --targets "$work/targets-$n.txt" -o "$out" --interval "$interval" --duration "$secs" >/dev/null 2>&1
  read -r user sys elapsed <"$work/time-$n.txt"
  kill "$load_pid" 2>/dev/null || true
  for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${server_pids[@]}" "$load_pid" 2>/dev/null || true
  samples=0; gaps=0; worst_drift=0; worst_p99=0
  for series in "$out"/*/run.series.jsonl; do
    stats=$("$bin/examples/schedule_stats" "$series")
    s=$(echo "$stats" | sed -n 's/^ *\([0-9]*\) samples.*/\1/p')
    d=$(echo "$stats" | sed -n 's/.*drift against the schedule *\([-+0-9.]*\)%.*/\1/p')
    p=$(echo "$stats" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p')
    g=$(grep -c '"gap"' "$series" || true)
    samples=$((samples + s)); gaps=$((gaps + g))
    worst_drift=$(python3 -c "print(max(abs($worst_drift), abs($d)))")
    worst_p99=$(python3 -c "print(max($worst_p99, $p))")
  done
  cpu=$(python3 -c "print(f'{100*($user+$sys)/$elapsed:.1f}%')")
  printf '%-6s %-10s %-6s %-14s %-12s %-10s\n' "$n" "$samples" "$gaps" "${worst_drift}%" "${worst_p99} ms" "$cpu"
done
