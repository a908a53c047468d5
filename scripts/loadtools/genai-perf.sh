#!/usr/bin/env bash
# GenAI-Perf (genai-perf 0.0.16) cannot run here: it drives Triton's perf_analyzer binary,
# which no Python package ships. Its files are written by scripts/loadtools/standin.py:
# perf_analyzer's profile_export.json as genai_perf/profile_data_parser reads it, and
# profile_export_genai_perf.json as genai_perf/export_data/json_exporter.py writes it
# (metrics/statistics.py), against the simulated vLLM:
#   concurrency-8  32 streamed completions, 8 at once
source "$(dirname "$0")/common.sh"
build_inferlint
HOW="needs Triton's perf_analyzer binary"
prepare genai-perf concurrency-8
standin_case genai-perf vllm "" "a normal run: artifacts/<model>-openai-completions-concurrency8/ as genai-perf profile --concurrency 8 --request-count 32 --streaming leaves it (failed requests are not modelled: how perf_analyzer records them is not known here)" "$HOW" --out "$OUT/artifacts/sim-model-openai-completions-concurrency8"
