#!/usr/bin/env bash
# GuideLLM 0.8.1 against the simulated vLLM, through `inferlint xray`:
#   concurrent-8    32 chat requests, 8 at once, 32 prompt and 32 output tokens
#   some-errored    the same, the server answering 500 to every 5th request
#   all-failed-404  the same, every request for a model the server does not serve (404)
# Usage: scripts/loadtools/guidellm.sh   (see common.sh for the environment)
source "$(dirname "$0")/common.sh"
VERSION=0.8.1
build_inferlint
venv guidellm "${PYTHON:-python3}" "guidellm==$VERSION"
make_tokenizer "$VENV"
G="$VENV/bin/guidellm"

run_guidellm() { # SERVE-ARGS MODEL OUTPUT-FILE
  xray 8 "--engine vllm --speed 1 $1" \
    "$G" run --backend "kind=openai_http,target=$URL,model=$2" \
    --tokenizer "kind=hf_auto,model=$TOK" \
    --data kind=synthetic_text,prompt_tokens=32,output_tokens=32 \
    --profile kind=concurrent,streams=8 --constraint kind=max_requests,count=32 \
    --output "kind=json,path=$OUT/$3" --disable-progress
}

prepare guidellm concurrent-8
run_guidellm "" "$MODEL" guidellm.json
made "$VERSION" "a normal run: 32 streamed chat completions, 8 at once, every one answered"

prepare guidellm some-errored
run_guidellm "--error-every 5" "$MODEL" benchmarks.json
made "$VERSION" "a run with failed requests: the server answers 500 to every 5th completion request it gets (inferlint-sim --error-every 5), so GuideLLM records errored requests beside the successful ones"

prepare guidellm all-failed-404
run_guidellm "" wrong-model guidellm.json
made "$VERSION" "every request fails: GuideLLM asks for a model the server does not serve and each of the 32 requests gets 404; GuideLLM still says the benchmark is complete"
