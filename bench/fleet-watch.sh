#!/usr/bin/env bash
# How many servers one `inferlint watch URL URL …` records on one schedule: for each
# count N, N servers, then `watch` of all N at --interval (default 0.25 s, 4 Hz) for
# SECONDS under /usr/bin/time, then each replica's series measured against its schedule
# (examples/schedule_stats): the worst drift and the worst p99 distance over the
# replicas, the gap records (missed slots), and the recorder's CPU.
#
# The servers:
# - by default, N simulated vLLM servers (inferlint-sim serve, real speed) with a
#   benchmark load looping on the first: their pages are the simulator's (about 8 KB);
# - with PAGE=FILE, one process serving FILE's page on N ports (inferlint-sim pages),
#   whole at /metrics and narrowed by name[] at /metrics/ as vLLM serves it: a real
#   page's size and shape, served statically so that the servers' own cost is not in the
#   figures (PAGE=fixtures/real/vllm-0.32-cpu/healthy-vllm-bench/after.snapshot.json is
#   a real vLLM 0.32 page of 50 KB); PAGE_THREADS=K (default 1) answers on K threads,
#   side by side as servers on machines of their own answer, where one thread answers
#   every server's scrapes of a slot one after another.
# WATCH_ARGS are added to watch's flags (--whole-pages: every scrape reads the whole page).
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

printf '%-6s %-10s %-6s %-8s %-14s %-12s %-8s %s\n' servers samples gaps "sum gaps" "worst drift" "worst p99" "CPU" "pages"
for n in "${counts[@]}"; do
  urls=()
  server_pids=()
  load_pid=
  if [ -n "${PAGE:-}" ]; then
    : >"$work/urls-$n"
    "$bin/inferlint-sim" pages "$PAGE" --servers "$n" --threads "${PAGE_THREADS:-1}" >"$work/urls-$n" 2>/dev/null &
    server_pids+=($!); pids+=($!)
    for _ in $(seq 200); do [ "$(wc -l <"$work/urls-$n")" -ge "$n" ] && break; sleep 0.05; done
    mapfile -t urls <"$work/urls-$n"
  else
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
  fi
  out="$work/fleet-$n"
  # Through --targets, so that one server is recorded as a fleet of one, like the others.
  printf '%s\n' "${urls[@]}" >"$work/targets-$n.txt"
  /usr/bin/time -f '%U %S %e' -o "$work/time-$n.txt" \
    "$bin/inferlint" watch --targets "$work/targets-$n.txt" -o "$out" --interval "$interval" --duration "$secs" ${WATCH_ARGS:-} >/dev/null 2>&1
  read -r user sys elapsed <"$work/time-$n.txt"
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null || true
  for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait "${server_pids[@]}" $load_pid 2>/dev/null || true
  samples=0; gaps=0; drifts=(); p99s=()
  for series in "$out"/*/run.series.jsonl; do
    stats=$("$bin/examples/schedule_stats" "$series")
    s=$(echo "$stats" | sed -n 's/^ *\([0-9]*\) samples.*/\1/p')
    drifts+=("$(echo "$stats" | sed -n 's/.*drift against the schedule *\([-+0-9.]*\)%.*/\1/p')")
    p99s+=("$(echo "$stats" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p')")
    g=$(grep -c '"gap"' "$series" || true)
    samples=$((samples + s)); gaps=$((gaps + g))
  done
  worst_drift=$(printf '%s\n' "${drifts[@]}" | awk '{v = $1 < 0 ? -$1 : $1; if (v > m) m = v} END {printf "%.4f", m}')
  worst_p99=$(printf '%s\n' "${p99s[@]}" | awk '$1 > m {m = $1} END {printf "%.3f", m}')
  sum_gaps=$(grep -c '"gap"' "$out/fleet.series.jsonl" || true)
  # How the first replica asked for its pages after the first (the header's "pages").
  pages=$(head -n 1 "$(ls "$out"/*/run.series.jsonl | head -n 1)" |
    python3 -c 'import json,sys; p=json.load(sys.stdin).get("pages") or {}; print(p.get("path","?") + (" filtered" if p.get("filtered_to") else " whole"))')
  cpu=$(python3 -c "print(f'{100*($user+$sys)/$elapsed:.1f}%')")
  printf '%-6s %-10s %-6s %-8s %-14s %-12s %-8s %s\n' "$n" "$samples" "$gaps" "$sum_gaps" "${worst_drift}%" "${worst_p99} ms" "$cpu" "$pages"
done
