#!/usr/bin/env bash
# `vllm bench serve` (vLLM 0.33.0, a client only: no GPU is used) against the simulated
# vLLM, through `inferlint xray`, which adds --save-result --result-dir $OUT
# --result-filename bench.json (the flags it adds for vLLM's own client):
#   concurrent-16          32 random prompts of 32 tokens, 32 output tokens, 16 at once
#   concurrent-16-detailed the same with --save-detailed (per-request arrays)
#   some-errored-detailed  the same, the server answering 500 to every 5th request
#   all-failed-detailed    every request answered 500 (the engine is dead)
# Usage: scripts/loadtools/vllm.sh   (see common.sh for the environment)
source "$(dirname "$0")/common.sh"
VERSION=0.33.0
build_inferlint
# The whole vLLM package (with its CUDA build of torch) is installed for its client.
venv vllm "${PYTHON:-python3}" "vllm==$VERSION"
make_tokenizer "$VENV"
V="$VENV/bin/vllm"

run_vllm() { # SERVE-ARGS EXTRA-FLAGS...
  local serve="$1"
  shift
  xray 16 "--engine vllm --speed 1 $serve" \
    "$V" bench serve --backend openai --base-url "$URL" --model "$MODEL" --tokenizer "$TOK" \
    --dataset-name random --random-input-len 32 --random-output-len 32 --ignore-eos \
    --num-prompts 32 --max-concurrency 16 --seed 0 --disable-tqdm "$@"
}

prepare vllm concurrent-16
run_vllm ""
made "$VERSION" "a normal run without --save-detailed: 32 random prompts, 16 at once, every one answered; bench.json holds the summary only"

prepare vllm concurrent-16-detailed
run_vllm "" --save-detailed
made "$VERSION" "the same normal run with --save-detailed: bench.json also holds one array entry per request (input_lens, output_lens, ttfts, itls, generated_texts, errors)"

prepare vllm some-errored-detailed
run_vllm "--error-every 5" --save-detailed
made "$VERSION" "a run with failed requests: the server answers 500 to every 5th completion request (inferlint-sim --error-every 5); vLLM counts them in failed and keeps each one's error text with --save-detailed"

prepare vllm all-failed-detailed
run_vllm "--error-from 1" --save-detailed
made "$VERSION" "every request fails: the server answers 500 to every completion request (inferlint-sim --error-from 1, as an API server whose engine died). vLLM 0.33 sends no test request by default (--ready-check-timeout-sec 0: 'Skipping endpoint ready check.')"
