#!/usr/bin/env bash
# kubernetes-sigs inference-perf 0.7.0 against the simulated vLLM, through
# `inferlint xray`. Its config is written into the run folder ($OUT/config.yml) and its
# reports go to $OUT/inference-perf/ (summary and per-stage lifecycle metrics, the
# per-request lifecycle file):
#   concurrent-8    streamed completions, a concurrent load stage of 32 requests 8 at
#                   once, random prompts of 32 tokens, 32 output tokens
#   some-errored    the same, the server answering 500 to every 5th request
# inference-perf needs Python 3.12 or newer: PYTHON must name one.
# Usage: PYTHON=python3.12 scripts/loadtools/inference-perf.sh   (see common.sh)
source "$(dirname "$0")/common.sh"
VERSION=0.7.0
build_inferlint
venv inference-perf "${PYTHON:-python3.12}" "inference-perf==$VERSION"
make_tokenizer "$VENV"
IP="$VENV/bin/inference-perf"

run_ip() { # SERVE-ARGS
  mkdir -p "$OUT"
  cat > "$OUT/config.yml" <<YAML
load:
  type: concurrent
  stages:
  - num_requests: 32
    concurrency_level: 8
api:
  type: completion
  streaming: true
server:
  type: vllm
  model_name: $MODEL
  base_url: $URL
  ignore_eos: true
tokenizer:
  pretrained_model_name_or_path: $TOK
data:
  type: random
  input_distribution: {min: 32, max: 32, mean: 32, std_dev: 0, total_count: 32}
  output_distribution: {min: 32, max: 32, mean: 32, std_dev: 0, total_count: 32}
report:
  request_lifecycle:
    summary: true
    per_stage: true
    per_request: true
storage:
  local_storage:
    path: $OUT/inference-perf
YAML
  xray 8 "--engine vllm --speed 1 $1" "$IP" --config_file "$OUT/config.yml"
}

prepare inference-perf concurrent-8
run_ip ""
made "$VERSION" "a normal run: one concurrent stage of 32 streamed completions, 8 at once, every one answered"

prepare inference-perf some-errored
run_ip "--error-every 5"
made "$VERSION" "a run with failed requests: the server answers 500 to every 5th completion request (inferlint-sim --error-every 5); inference-perf counts them as failures in its lifecycle reports"
