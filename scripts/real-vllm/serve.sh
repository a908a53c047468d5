#!/usr/bin/env bash
# Serves the tiny model with the real vLLM CPU build on 127.0.0.1, in the foreground, its
# log on stderr: what `inferlint xray --serve` starts (or run it by hand and point
# `inferlint watch` at it).
#   PORT        the port (default 8000)
#   KV_GIB      VLLM_CPU_KVCACHE_SPACE, the KV cache in whole GiB (default 1; not set
#               when the arguments size it with --kv-cache-memory-bytes)
#   extra arguments go to `vllm serve` as they are (--max-num-seqs 2, --enable-prefix-caching ...)
# Usage: scripts/real-vllm/serve.sh [VLLM-SERVE-ARGS...]
source "$(dirname "$0")/common.sh"
# VLLM_CPU_KVCACHE_SPACE (whole GiB) wins over --kv-cache-memory-bytes when both are set
# (vllm/platforms/cpu.py, "Legacy setting"), silently: a case that sizes the cache in
# bytes gets no variable.
if [[ " $* " == *" --kv-cache-memory-bytes "* ]]; then
  unset VLLM_CPU_KVCACHE_SPACE
else
  export VLLM_CPU_KVCACHE_SPACE="${KV_GIB:-1}"
fi
# Two cores: one for the engine's OpenMP threads is all this machine can give.
export VLLM_CPU_OMP_THREADS_BIND="${VLLM_CPU_OMP_THREADS_BIND:-auto}"
exec "$REAL_VLLM_VENV/bin/vllm" serve "$REAL_VLLM_MODEL" \
  --served-model-name "$MODEL_NAME" --host 127.0.0.1 --port "${PORT:-8000}" \
  --max-model-len 512 --dtype bfloat16 "$@"
