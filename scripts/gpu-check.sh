#!/usr/bin/env bash
# gpu-inspect and teardown against a real process holding GPU memory.
#
# Needs: Linux, an NVIDIA GPU with its driver, python3 with a CUDA PyTorch, and an
# inferlint binary ($INFERLINT, else target/release/inferlint, else target/debug/inferlint,
# else one built with cargo). Starts the stand-in engine (a front run as `vllm serve`
# whose engine child renames itself VLLM::EngineCore and holds $GIB GiB, default 4), then
# runs gpu-inspect and teardown on the idle card, the held card and the orphaned engine,
# and a real teardown from a `bash -c` one-liner that mentions `vllm serve`. Prints what it
# saw, for docs/gpu.md's "Device results"; exits with the number of expectations that did
# not hold (0: all held; 100 or more: could not run).
#
# Everything it starts runs in a session of its own, and every process of that session is
# killed on every way out. The real teardown runs with INFERLINT_SESSION_ONLY=1, so it can
# stop nothing the script did not start.

set -u

if [ "${GPU_CHECK_IN_SESSION:-}" != 1 ]; then
  export GPU_CHECK_IN_SESSION=1
  exec setsid -w bash "$0" "$@"
fi

cd "$(dirname "$0")/.." || exit 100
GIB=${GIB:-4}
FAILS=0
WORK=$(mktemp -d)
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || { echo "no python3"; exit 100; }
MYSID=$(cut -d' ' -f6 "/proc/$$/stat")

# Every process of this session but this shell, killed by PID (the session holds only what
# this script started).
cat > "$WORK/members.py" <<'EOF'
import os, sys
sid, shell = sys.argv[1], int(sys.argv[2])
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) in (shell, os.getpid()):
        continue
    try:
        stat = open("/proc/%s/stat" % name).read()
    except OSError:
        continue
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[3] == sid and fields[0] not in ("Z", "X"):
        print(name)
EOF
cleanup() {
  for _ in 1 2 3 4 5; do
    pids=$("$PY" "$WORK/members.py" "$MYSID" "$$")
    [ -z "$pids" ] && break
    kill -9 $pids 2>/dev/null
    sleep 0.3
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 101' INT TERM

section() { printf '\n== %s\n' "$*"; }
expect() {
  local what=$1
  shift
  if "$@"; then
    echo "   ok: $what"
  else
    echo "   NOT AS EXPECTED: $what"
    FAILS=$((FAILS + 1))
  fi
}
# run_il ENV... -- ARGS...: runs inferlint, shows its output indented, sets OUT and RC.
run_il() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "\$ ${envs[*]:-}${envs[*]:+ }inferlint $*"
  OUT=$(env ${envs[@]+"${envs[@]}"} "$INFERLINT" "$@" 2>&1)
  RC=$?
  printf '%s\n' "$OUT" | sed 's/^/    /'
  echo "    (exit $RC)"
}
has() { printf '%s\n' "$OUT" | grep -qF -- "$1"; }
json_get() { printf '%s' "$OUT" | "$PY" -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
proc_line() {
  local pid=$1
  if [ -r "/proc/$pid/stat" ]; then
    echo "   pid $pid: comm=$(cat "/proc/$pid/comm") state=$(cut -d' ' -f3 "/proc/$pid/stat")" \
      "ppid=$(grep PPid "/proc/$pid/status" | cut -f2) cmdline=$(tr '\0' ' ' < "/proc/$pid/cmdline")"
  else
    echo "   pid $pid: gone"
  fi
}
alive() { [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat")" != Z ]; }
gone() { ! alive "$1"; }

section "machine"
uname -srm
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version,compute_cap --format=csv
"$PY" -c 'import torch; assert torch.cuda.is_available(); print("torch", torch.__version__, "cuda", torch.version.cuda)' \
  || { echo "python3 has no CUDA PyTorch"; exit 100; }
if [ -z "${INFERLINT:-}" ]; then
  for candidate in target/release/inferlint target/debug/inferlint; do
    [ -x "$candidate" ] && INFERLINT=$PWD/$candidate && break
  done
fi
if [ -z "${INFERLINT:-}" ]; then
  cargo build --release -p inferlint-cli >/dev/null 2>&1 && INFERLINT=$PWD/target/release/inferlint
fi
[ -x "${INFERLINT:-}" ] || { echo "no inferlint binary (set INFERLINT)"; exit 100; }
"$INFERLINT" --version

# The stand-in: the user's, else one that behaves the same way.
mkdir -p "$WORK/bin"
STANDIN=${STANDIN:-}
for candidate in ../shared/tools/standin-engine.py shared/tools/standin-engine.py /work/shared/tools/standin-engine.py; do
  [ -z "$STANDIN" ] && [ -r "$candidate" ] && STANDIN=$candidate
done
if [ -n "$STANDIN" ]; then
  cp "$STANDIN" "$WORK/bin/vllm"
else
  cat > "$WORK/bin/vllm" <<'EOF'
import ctypes, multiprocessing, os, sys, time

def engine(gib):
    ctypes.CDLL(None).prctl(15, b"VLLM::EngineCore", 0, 0, 0)
    import torch
    held = torch.ones(int(gib * 2**30), dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    with open("/tmp/engine.ready", "w") as f:
        f.write(str(os.getpid()))
    while held is not None:
        time.sleep(1)

if __name__ == "__main__":
    gib = float(sys.argv[sys.argv.index("--gib") + 1]) if "--gib" in sys.argv else 4.0
    multiprocessing.set_start_method("spawn")
    child = multiprocessing.Process(target=engine, args=(gib,))
    child.start()
    with open("/tmp/front.pid", "w") as f:
        f.write(str(os.getpid()))
    child.join()
EOF
fi
if [ -n "$STANDIN" ]; then echo "stand-in: $STANDIN"; else echo "stand-in: this script's own"; fi

section "1. idle card"
run_il INFERLINT_SESSION_ONLY=1 -- gpu-inspect
expect "gpu-inspect passes on an idle card (exit 0)" [ "$RC" = 0 ]
expect "the T2 line reads '2 consecutive clear readings'" has "[ T2] PASS  2 consecutive clear readings"

section "2. the stand-in holds ${GIB} GiB"
rm -f /tmp/engine.ready /tmp/front.pid
(cd "$WORK" && exec "$PY" "$WORK/bin/vllm" serve Qwen/Qwen3-8B --gib "$GIB") > "$WORK/standin.log" 2>&1 &
for _ in $(seq 900); do [ -s /tmp/engine.ready ] && break; sleep 0.2; done
[ -s /tmp/engine.ready ] || { echo "the stand-in never held its memory:"; cat "$WORK/standin.log"; exit 102; }
FRONT=$(cat /tmp/front.pid)
ENGINE=$(cat /tmp/engine.ready)
proc_line "$FRONT"
proc_line "$ENGINE"
command -v nvidia-smi >/dev/null && nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv

run_il -- gpu-inspect --timeout 0
expect "gpu-inspect fails on the held card (exit 1)" [ "$RC" = 1 ]
expect "it names the engine by its pid and renamed process name" has "pid $ENGINE holds"
expect "it calls the engine a vLLM server" has "VLLM::EngineCor (vLLM server)"

run_il INFERLINT_SESSION_ONLY=1 -- teardown --dry-run
expect "the dry run lists the front" has "target  pid=$FRONT "
expect "the dry run lists the engine" has "target  pid=$ENGINE "
# Python's multiprocessing adds a resource tracker under the front: a descendant, so a
# target too, and one more that pkill would miss.
expect "pkill -f 'vllm serve' would miss the engine" has "(pkill -f 'vllm serve' would miss "
run_il INFERLINT_SESSION_ONLY=1 -- teardown --dry-run --engine sglang
expect "--engine sglang finds no SGLang server" has "no server processes found (SGLang)"
expect "and leaves the vLLM processes alone" has " processes of vLLM servers"
expect "a dry run signals nothing" alive "$ENGINE"

section "3. the front gets SIGKILL; the engine is orphaned"
kill -9 "$FRONT"
for _ in $(seq 100); do
  [ "$(grep PPid "/proc/$ENGINE/status" 2>/dev/null | cut -f2)" != "$FRONT" ] && break
  sleep 0.05
done
proc_line "$ENGINE"
command -v nvidia-smi >/dev/null && nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
run_il -- gpu-inspect --timeout 0
expect "the orphan keeps the card unclear (exit 1)" [ "$RC" = 1 ]
run_il INFERLINT_SESSION_ONLY=1 -- teardown --dry-run
expect "pkill -f 'vllm serve' would miss the orphan, as in the tutorial" has "(pkill -f 'vllm serve' would miss 1 and wrongly hit 0)"
run_il INFERLINT_SESSION_ONLY=1 -- teardown --dry-run --json
expect "the dry run lists only the orphaned engine" [ "$(json_get '[t["pid"] for t in d["targets"]]')" = "[$ENGINE]" ]
expect "by its process name" [ "$(json_get 'd["targets"][0]["why"]')" = "process name VLLM::EngineCor" ]

section "4. teardown from a bash -c one-liner that mentions vllm serve"
# A sampler beside it: every ~0.1 s, whether the engine lives and what nvidia-smi reads.
(
  t0=$(date +%s%N)
  while :; do
    state=$(cut -d' ' -f3 "/proc/$ENGINE/stat" 2>/dev/null || echo gone)
    used=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1)
    echo "   t=$((($(date +%s%N) - t0) / 1000000))ms engine=$state used=${used}MiB"
    sleep 0.1
  done
) > "$WORK/timeline" &
SAMPLER=$!
START=$(date +%s%N)
ONE_LINER=': "clean up after vllm serve"; "$INFERLINT" teardown --json > "$WORK/real.json"; echo $? > "$WORK/real.rc"; echo shell-survived'
SHELL_SAID=$(INFERLINT="$INFERLINT" WORK="$WORK" INFERLINT_SESSION_ONLY=1 bash -c "$ONE_LINER")
echo "   teardown took $((($(date +%s%N) - START) / 1000000)) ms"
sleep 0.5
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
echo "   timeline (first 40 samples):"
head -40 "$WORK/timeline"
OUT=$(cat "$WORK/real.json")
printf '%s\n' "$OUT" | sed 's/^/    /'
expect "the one-liner's shell survived" [ "$SHELL_SAID" = shell-survived ]
expect "teardown exited 0" [ "$(cat "$WORK/real.rc")" = 0 ]
expect "T2 passed" [ "$(json_get 'd["results"][0]["status"]')" = pass ]
expect "it signalled the engine" [ "$(json_get 'd["results"][0]["evidence"]["signalled"]')" = "[$ENGINE]" ]
expect "the engine is gone" gone "$ENGINE"

section "5. idle again"
command -v nvidia-smi >/dev/null && nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
run_il INFERLINT_SESSION_ONLY=1 -- gpu-inspect
expect "gpu-inspect passes again (exit 0)" [ "$RC" = 0 ]

section "summary"
echo "$FAILS expectation(s) did not hold"
exit "$FAILS"
