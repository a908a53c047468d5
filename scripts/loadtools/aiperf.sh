#!/usr/bin/env bash
# NVIDIA AIPerf 0.13.0 (`aiperf profile`) against the simulated vLLM, through
# `inferlint xray`; its artifacts go to $OUT/aiperf/ (profile_export_aiperf.json and
# .csv, the per-record profile_export.jsonl, its logs):
#   concurrency-8   2 warm-up requests, then 32 streamed chat requests, 8 at once,
#                   32 synthetic prompt tokens and 32 output tokens
#   some-errored    the same, the server answering 500 to every 5th request
# Usage: scripts/loadtools/aiperf.sh   (see common.sh for the environment)
source "$(dirname "$0")/common.sh"
VERSION=0.13.0
build_inferlint
venv aiperf "${PYTHON:-python3}" "aiperf==$VERSION"
make_tokenizer "$VENV"
A="$VENV/bin/aiperf"
# AIPerf in offline mode looks a tokenizer up in the hub's cache only, even when given a
# folder; online, a folder is loaded as it is (the hub is not reachable, and not needed).
unset HF_HUB_OFFLINE TRANSFORMERS_OFFLINE HF_DATASETS_OFFLINE

run_aiperf() { # SERVE-ARGS EXTRA-FLAGS...
  local serve="$1"
  shift
  xray 8 "--engine vllm --speed 1 $serve" \
    "$A" profile --model "$MODEL" --url "$URL" --endpoint-type chat --streaming \
    --tokenizer "$TOK" --concurrency 8 --request-count 32 --warmup-request-count 2 \
    --synthetic-input-tokens-mean 32 --synthetic-input-tokens-stddev 0 \
    --output-tokens-mean 32 --output-tokens-stddev 0 --extra-inputs ignore_eos:true \
    --random-seed 0 --ui-type simple --artifact-dir "$OUT/aiperf" "$@"
}

prepare aiperf concurrency-8
run_aiperf ""
made "$VERSION" "a normal run: 2 warm-up requests, then 32 streamed chat completions, 8 at once, every one answered"

prepare aiperf some-errored
run_aiperf "--error-every 5"
made "$VERSION" "a run with failed requests: the server answers 500 to every 5th completion request it gets, warm-up requests included (inferlint-sim --error-every 5); AIPerf counts them as errors, with an error record per failed request"
