#!/usr/bin/env bash
# TensorRT-LLM's benchmark_serving (python -m tensorrt_llm.serve.scripts.benchmark_serving)
# cannot run here: it is a module of the tensorrt_llm package, which needs CUDA. Its
# result file (--save-result --save-detailed) is written by scripts/loadtools/standin.py
# from the script's source (NVIDIA/TensorRT-LLM, tensorrt_llm/serve/scripts/
# benchmark_serving.py: benchmark() and main()), against the simulated TensorRT-LLM:
#   concurrent-8-detailed  a test request, then 32 streamed completions, 8 at once
#   some-errored-detailed  the same, the server answering 500 to every 5th request
source "$(dirname "$0")/common.sh"
build_inferlint
make_tokenizer "$VENVS/guidellm" 2>/dev/null || true
HOW="tensorrt_llm needs CUDA"
prepare trtllm concurrent-8-detailed
standin_case trtllm trtllm "" "a normal run as benchmark_serving --save-result --save-detailed writes it: 32 requests, 8 at once, after one untimed test request" "$HOW" --out "$OUT"
prepare trtllm some-errored-detailed
standin_case trtllm trtllm "--error-every 5" "a run with failed requests (inferlint-sim --error-every 5; the test request is the 1st): failed ones are in errors and left out of completed" "$HOW" --out "$OUT"
