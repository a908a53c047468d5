#!/usr/bin/env bash
# Records one simulated run with both tools at once (ours and the Python inferlint 0.3.1,
# a black box), then checks each tool's files with each tool and compares the verdicts.
# Also feeds the Python tool our gap and restart records. Usage: scripts/compare-live.sh
# (PY_INFERLINT=path/to/inferlint overrides bench/out/py/bin/inferlint).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PY_INFERLINT:-bench/out/py/bin/inferlint}
[ -x "$py" ] || { echo "no Python inferlint at $py (python3 -m venv /tmp/py && /tmp/py/bin/pip install inferlint==0.3.1)"; exit 2; }
cargo build --release -q -p inferlint-cli -p inferlint-sim
ours=target/release/inferlint
sim=target/release/inferlint-sim
out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
"$sim" serve --engine vllm --port "$port" --speed 1 >"$out/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf "$url/health" >/dev/null && break; sleep 0.1; done

mkdir -p "$out/ours" "$out/py"
"$ours" snapshot "$url" -o "$out/ours/before.json" >/dev/null
"$py" snapshot "$url" -o "$out/py/before.json" >/dev/null
"$ours" watch "$url" -o "$out/ours/run.series.jsonl" --interval 0.25 >/dev/null 2>&1 & w1=$!; pids+=($w1)
"$py" watch "$url" -o "$out/py/run.series.jsonl" --interval 0.25 >/dev/null 2>&1 & w2=$!; pids+=($w2)
sleep 1
"$sim" load "$url" --num-prompts 48 --max-concurrency 16 --output-len 64 >/dev/null
sleep 1
"$ours" snapshot "$url" -o "$out/ours/after.json" >/dev/null
"$py" snapshot "$url" -o "$out/py/after.json" >/dev/null
kill -TERM "$w1" "$w2"; wait "$w1" "$w2" || true

# Our series with a gap and a restart record in the middle, as a dying server leaves it.
python3 - "$out/ours/run.series.jsonl" "$out/ours/gaps.series.jsonl" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(True)
mid = len(lines) // 2
extra = ['{"gap": "http://127.0.0.1:1/metrics: connection refused", "t_wall": 1.0, "t_mono_ns": 1}\n',
         '{"restart": "vllm:num_requests_total went down (9 -> 0)", "t_wall": 2.0, "t_mono_ns": 2}\n']
open(sys.argv[2], "w").writelines(lines[:mid] + extra + lines[mid:])
PY

verdicts() {  # tool, folder, series file
  local tool=$1 d=$2 s=$3
  { "$tool" preemption --json "$d/before.json" "$d/after.json" --series "$d/$s" || true
    "$tool" rate --json "$d/before.json" "$d/after.json" || true
    "$tool" series --json "$d/$s" --snapshot "$d/after.json" --requested 16 || true
  } 2>/dev/null | python3 -c '
import json, sys
text = sys.stdin.read()
dec, i, out = json.JSONDecoder(), 0, []
while i < len(text):
    if text[i].isspace(): i += 1; continue
    v, i = dec.raw_decode(text, i); out += v
for r in out:
    if r["status"] != "not_checked": print(r["tripwire"], r["status"], r["message"])'
}
status=0
for set in "ours run.series.jsonl" "py run.series.jsonl" "ours gaps.series.jsonl"; do
  read -r who file <<<"$set"
  verdicts "$ours" "$out/$who" "$file" >"$out/a.txt"
  verdicts "$py" "$out/$who" "$file" >"$out/b.txt"
  if diff -u --label "ours reading $who/$file" --label "python reading $who/$file" "$out/a.txt" "$out/b.txt"; then
    echo "same verdicts: $who/$file"; sed 's/^/  /' "$out/a.txt"
  else
    status=1
  fi
done
exit $status
