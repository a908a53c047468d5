#!/usr/bin/env bash
# The step plugin's cost on the real engine: ROUNDS (default 3) pairs of rounds,
# interleaved (without, with, without, with, ...), each a fresh server
# (`serve.sh --enable-logging-iteration-details`, both ways) and the same load
# (vllm bench serve: PROMPTS (default 64) random prompts, 32 in / 64 out, ignore_eos, 8 at once). "With"
# sets INFERLINT_STEPS (the plugin writes steps.jsonl); "without" leaves it unset (the
# plugin, installed, does nothing). Prints one line a round: the output throughput
# vllm bench serve measured, and for "with" the end line's record cost.
# Usage: scripts/real-vllm/steps-cost.sh [ROUNDS]   (steps.sh installs the plugin)
source "$(dirname "$0")/common.sh"
WORK="${REAL_VLLM_WORK:-/tmp/inferlint-real-vllm}/steps-cost-${PROMPTS:-64}"
rm -rf "$WORK"
mkdir -p "$WORK"
trap stop_all_started EXIT
for round in $(seq 1 "${1:-3}"); do
  for way in without with; do
    dir="$WORK/$round-$way"
    mkdir -p "$dir"
    port="$(free_port)"
    if [ "$way" = with ]; then export INFERLINT_STEPS="$dir/steps.jsonl"; else unset INFERLINT_STEPS; fi
    start_server "$dir/server.log" "$port" --enable-logging-iteration-details
    unset INFERLINT_STEPS
    wait_ready "http://127.0.0.1:$port" "$SERVER_PID"
    "$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "http://127.0.0.1:$port" \
      --model "$MODEL_NAME" --tokenizer "$REAL_VLLM_MODEL" --dataset-name random --seed 0 \
      --random-input-len 32 --random-output-len 64 --ignore-eos --num-prompts "${PROMPTS:-64}" \
      --max-concurrency 8 --disable-tqdm --save-result --result-dir "$dir" \
      --result-filename bench.json > "$dir/bench.log" 2>&1
    stop_group "$SERVER_PID"
    python3 - "$dir" "$round" "$way" <<'PY'
import json, sys
d, r, way = sys.argv[1:]
b = json.load(open(f"{d}/bench.json"))
line = f"round {r} {way:7}: {b['output_throughput']:.1f} output tok/s, {b['completed']} completed, {b['duration']:.2f} s"
try:
    end = json.loads(open(f"{d}/steps.jsonl").read().splitlines()[-1])
    line += f"; record {end['record_ns'] / end['calls'] / 1e3:.1f} µs a call over {end['calls']} calls, {end['dropped']} dropped"
except (FileNotFoundError, KeyError, IndexError):
    pass
print(line, flush=True)
PY
  done
done
