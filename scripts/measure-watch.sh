#!/usr/bin/env bash
# Measures `inferlint watch` against the simulated engine while a load runs on the same
# machine: how far the samples stray from their schedule, and what the recorder costs
# in CPU. Usage: scripts/measure-watch.sh [SECONDS] [INTERVAL]   (default 60, 0.25)
# WATCH_ARGS adds flags to watch: WATCH_ARGS="--requested 16" judges the mid-run
# tripwires as samples arrive, as the second set of measurements in docs/recording.md;
# INFERLINT_NVML_READINGS=FILE replays GPU readings beside each sample (docs/gpu.md).
# TRACES=1 has the server export its spans (OTLP over gRPC) and publish its KV events, and
# watch receive both (--otlp, --kv-events) beside the sampler, as docs/recording.md
# measures them. Builds release binaries first. Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
interval=${2:-0.25}
cargo build --release -q -p inferlint-cli -p inferlint-sim
cargo build --release -q -p inferlint-live --example schedule_stats
bin=target/release
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
serve_traces=()
watch_traces=()
if [ -n "${TRACES:-}" ]; then
  otlp=$(free_port); kvpub=$(free_port); kvreplay=$(free_port)
  # The receiver listens before the server exports; the subscriber connects to the
  # publisher the server binds (on the loopback).
  watch_traces=(--otlp "$otlp" --kv-events "tcp://127.0.0.1:$kvpub" --kv-replay "tcp://127.0.0.1:$kvreplay")
  serve_traces=(--otlp-traces-endpoint "http://127.0.0.1:$otlp" --kv-events-config
    "{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": \"tcp://*:$kvpub\", \"replay_endpoint\": \"tcp://*:$kvreplay\"}")
fi
"$bin/inferlint-sim" serve --engine vllm --port "$port" --speed 1 "${serve_traces[@]}" >"$out/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done

# The load: a benchmark client against the server, and one busy loop per core.
( end=$((SECONDS + secs + 5)); while [ $SECONDS -lt $end ]; do
    "$bin/inferlint-sim" load "http://127.0.0.1:$port" --num-prompts 64 --max-concurrency 16 \
      --output-len 64 --timeout 120 >/dev/null 2>&1 || true; done ) &
pids+=($!)
for _ in $(seq "$(nproc)"); do ( end=$((SECONDS + secs + 5)); while [ $SECONDS -lt $end ]; do :; done ) & pids+=($!); done

/usr/bin/time -f '%U user %S system %e elapsed' -o "$out/time.txt" \
  "$bin/inferlint" watch "http://127.0.0.1:$port" -o "$out/run.series.jsonl" \
  --interval "$interval" --duration "$secs" "${watch_traces[@]}" ${WATCH_ARGS:-} >/dev/null 2>"$out/watch.err"
if [ -n "${WATCH_ARGS:-}" ]; then
  grep -c '^verdict: ' "$out/watch.err" | sed 's/^/  verdict changes printed: /' || true
fi
read -r user _ sys _ elapsed _ <"$out/time.txt"
echo "watch --interval $interval for $secs s under load:"
echo "  CPU: ${user}s user + ${sys}s system over ${elapsed}s = $(python3 -c "print(f'{100*($user+$sys)/$elapsed:.2f}')")% of one core"
grep -c '"gap"' "$out/run.series.jsonl" | sed 's/^/  gap records: /' || true
"$bin/examples/schedule_stats" "$out/run.series.jsonl"
if [ -n "${TRACES:-}" ]; then
  echo "  spans received: $(grep -o '"llm_request"' "$out/spans.otlp.jsonl" | wc -l) request spans in $(($(wc -l <"$out/spans.otlp.jsonl") - 1)) export requests"
  tail -1 "$out/kv-events.jsonl" | sed 's/^/  KV events: /'
fi
