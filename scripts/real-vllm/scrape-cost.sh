#!/usr/bin/env bash
# What one scrape costs the real vLLM CPU build's API server, with the whole page and with
# the page the recorder asks for now (prometheus_client's name[] filter at /metrics/), and
# what the recorder costs a benchmark's throughput and TPOT.
#
# Part 1, the server's CPU per scrape. The API server is the process `vllm serve` runs as
# (serve.sh execs it, so it leads the process group started here). Its user + system
# ticks (/proc/PID/stat) are read around three kinds of stretch of SECONDS each, taken in
# turn ROUNDS times: no scrape at all (what the idle server spends on its own), `inferlint
# watch --interval 0.05 --whole-pages`, and `inferlint watch --interval 0.05` (each asks
# 20 pages a second). Per scrape = (ticks of the stretch - ticks of the idle stretch
# beside it) / samples the recording holds. Pages sizes are measured with curl.
#
# Part 2, the benchmark with and without the recorder: `vllm bench serve` (64 random
# prompts, 64 in / 64 out, 8 at once) with no recorder, with `watch --interval 0.25`
# (4 Hz, what xray uses) and with `watch --interval 0.25 --whole-pages`, in turn, ROUNDS
# times; output tok/s and median TPOT from each result file.
#
# Everything runs under scripts/real-vllm/quiet.sh's watch of the machine: the share of
# the CPUs build tools took is printed beside each figure.
#
# Usage: scripts/real-vllm/scrape-cost.sh OUT [ROUNDS] [SECONDS]   (default 3 20)
#   PARTS=1 or PARTS=2 runs one part only.
# Needs scripts/real-vllm/setup.sh (never in CI) and a release build of inferlint.
source "$(dirname "$0")/common.sh"
OUT="$1"
ROUNDS="${2:-3}"
SECS="${3:-20}"
mkdir -p "$OUT"
BIN="$ROOT/target/release/inferlint"
[ -x "$BIN" ] || { echo "build it first: cargo build --release -p inferlint-cli" >&2; exit 2; }
PORT="$(free_port)"
URL="http://127.0.0.1:$PORT"
cleanup() {
  for g in "${STARTED_GROUPS[@]}"; do kill -TERM -- "-$g" 2>/dev/null || true; done
  for g in "${STARTED_GROUPS[@]}"; do
    for _ in $(seq 100); do kill -0 -- "-$g" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$g" 2>/dev/null || true
  done
}
trap cleanup EXIT
start_server "$OUT/boot.log" "$PORT"
for _ in $(seq 600); do curl -sf "$URL/health" >/dev/null && break; sleep 1; done
curl -sf "$URL/health" >/dev/null || { echo "the server did not come up: $OUT/boot.log" >&2; exit 1; }
API_PID="$SERVER_PID"
ticks() { awk '{print $14 + $15}' "/proc/$API_PID/stat"; }
HZ="$(getconf CLK_TCK)"

# One warm-up of each, so that no first-request cost lands in a stretch.
"$BIN" watch "$URL" -o "$OUT/warm.jsonl" --force --interval 0.05 --duration 2 --no-gpu >/dev/null 2>&1
"$BIN" watch "$URL" -o "$OUT/warm.jsonl" --force --interval 0.05 --duration 2 --no-gpu --whole-pages >/dev/null 2>&1
head -1 "$OUT/warm.jsonl" >/dev/null
FILTERED_PATH="$(grep -o 'GET /metrics/?[^ ]*' "$OUT/boot.log" | tail -1 | cut -c5-)"
if [ "${PARTS:-12}" != 2 ]; then
echo "page sizes: whole $(curl -s "$URL/metrics" | wc -c) bytes, filtered $(curl -s "$URL$FILTERED_PATH" | wc -c) bytes" | tee "$OUT/cost.txt"

stretch() {   # stretch KIND: prints "KIND TICKS SAMPLES"
  local kind="$1" before after samples=0
  before="$(ticks)"
  case "$kind" in
    idle) sleep "$SECS" ;;
    whole|filtered)
      local extra=()
      [ "$kind" = whole ] && extra=(--whole-pages)
      "$BIN" watch "$URL" -o "$OUT/$kind.jsonl" --force --interval 0.05 --duration "$SECS" \
        --no-gpu "${extra[@]}" >/dev/null 2>&1
      samples="$(grep -c '"t_wall"' "$OUT/$kind.jsonl")"
      ;;
  esac
  after="$(ticks)"
  echo "$kind $((after - before)) $samples"
}
: > "$OUT/stretches.txt"
for r in $(seq "$ROUNDS"); do
  for kind in idle whole filtered; do
    bash "$ROOT/scripts/real-vllm/quiet.sh" true >/dev/null 2>&1 || true
    stretch "$kind" | tee -a "$OUT/stretches.txt"
  done
done
python3 - "$OUT/stretches.txt" "$HZ" <<'PY' | tee -a "$OUT/cost.txt"
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
hz = int(sys.argv[2])
by = {}
for i in range(0, len(rows), 3):
    idle = int(rows[i][1])
    for kind, t, n in rows[i + 1:i + 3]:
        by.setdefault(kind, []).append((int(t) - idle) / hz / max(int(n), 1) * 1e3)
for kind, v in by.items():
    print(f"API server CPU per scrape, {kind}: " + " / ".join(f"{x:.2f}" for x in sorted(v)) +
          f" ms (min / ... / max of {len(v)} rounds; median {statistics.median(v):.2f} ms)")
w, f = statistics.median(by["whole"]), statistics.median(by["filtered"])
print(f"filtered / whole: {f / w:.2f}")
PY
fi

[ "${PARTS:-12}" = 1 ] && exit 0
# Part 2.
BENCH=("$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "$URL" --model "$MODEL_NAME"
  --tokenizer "$REAL_VLLM_MODEL" --dataset-name random --seed 0 --disable-tqdm --save-result
  --random-input-len 64 --random-output-len 64 --ignore-eos --num-prompts 64 --max-concurrency 8)
for r in $(seq "$ROUNDS"); do
  for kind in none filtered whole; do
    dir="$OUT/bench-$r-$kind"
    mkdir -p "$dir"
    rec=""
    if [ "$kind" != none ]; then
      extra=()
      [ "$kind" = whole ] && extra=(--whole-pages)
      "$BIN" watch "$URL" -o "$dir/run.series.jsonl" --interval 0.25 --no-gpu "${extra[@]}" >/dev/null 2>&1 &
      rec=$!
      sleep 1
    fi
    bash "$ROOT/scripts/real-vllm/quiet.sh" "${BENCH[@]}" --result-dir "$dir" --result-filename bench.json >"$dir/load.log" 2>&1
    [ -n "$rec" ] && { kill -INT "$rec"; wait "$rec" || true; }
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee -a "$OUT/cost.txt"
import json, sys, statistics, os
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for kind in ("none", "filtered", "whole"):
        d = f"{out}/bench-{r}-{kind}"
        b = json.load(open(f"{d}/bench.json"))
        q = open(f"{d}/quiet.txt").read().strip() if os.path.exists(f"{d}/quiet.txt") else "?"
        rows.setdefault(kind, []).append((b["output_throughput"], b["median_tpot_ms"], q))
for kind, v in rows.items():
    tps = [x[0] for x in v]; tpot = [x[1] for x in v]
    print(f"bench, recorder {kind}: output tok/s " + " / ".join(f"{x:.1f}" for x in tps) +
          f" (median {statistics.median(tps):.1f}); median TPOT ms " +
          " / ".join(f"{x:.2f}" for x in tpot) + f" (median {statistics.median(tpot):.2f}); quiet: " +
          "; ".join(x[2] for x in v))
PY
