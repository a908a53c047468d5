#!/usr/bin/env bash
# LLMPerf (ray-project/llmperf, token_benchmark_ray.py) cannot run here: it is not
# published as a package (the llmperf on the Python registry is another project), needs
# Ray, and loads its tokenizer from the model hub. Its two result files are written by
# scripts/loadtools/standin.py from its source (token_benchmark_ray.py,
# src/llmperf/utils.py, src/llmperf/common_metrics.py), against the simulated vLLM:
#   concurrent-8   32 streamed chat completions, 8 at once
#   some-errored   the same, the server answering 500 to every 5th request
#   all-failed     every request answered 500: the summary's statistics are NaN
source "$(dirname "$0")/common.sh"
build_inferlint
HOW="not a published package; needs Ray and a tokenizer from the model hub"
prepare llmperf concurrent-8
standin_case llmperf vllm "" "a normal run: the summary and the individual responses of token_benchmark_ray.py --results-dir" "$HOW" --out "$OUT/result_outputs"
prepare llmperf some-errored
standin_case llmperf vllm "--error-every 5" "a run with failed requests (inferlint-sim --error-every 5): error_code and error_msg per request, number_errors and error_code_frequency in the summary" "$HOW" --out "$OUT/result_outputs"
prepare llmperf all-failed
standin_case llmperf vllm "--error-from 1" "every request fails (inferlint-sim --error-from 1): the summary says 0 completed and its statistics are NaN (pandas on no rows, written by json.dump as NaN)" "$HOW" --out "$OUT/result_outputs"
