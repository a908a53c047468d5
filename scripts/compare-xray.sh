#!/usr/bin/env bash
# Records one simulated run with `inferlint xray` (the simulated vLLM server as --serve,
# its load tool as the load) and checks that the Python inferlint 0.3.1 reads the run
# folder to the same verdicts as ours.
# Needs: a built workspace (cargo build) and python3 with venv.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p inferlint-cli -p inferlint-sim
RS=target/debug/inferlint
SIM=target/debug/inferlint-sim
PY="${PY_INFERLINT:-bench/out/py/bin/inferlint}"
if [ ! -x "$PY" ]; then
  python3 -m venv bench/out/py && bench/out/py/bin/pip install -q inferlint==0.3.1
  PY=bench/out/py/bin/inferlint
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
port="$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")"
set +e
"$RS" xray -o "$work/run" --no-gpu --requested 32 \
  --serve "$SIM serve --engine vllm --case vllm-hybrid --speed 200 --port $port" \
  -- "$SIM" load "http://127.0.0.1:$port" --num-prompts 32 --max-concurrency 32 \
     --input-len 88 --output-len 1000 --result-file "$work/run/bench.json" > "$work/xray.out" 2>&1
echo "xray exit status: $? (1 expected: the simulated server preempts)"
set -e
"$RS" report "$work/run" -o "$work/rs.html" --json > "$work/rs.json" || true
"$PY" report "$work/run" -o "$work/py.html" --json > "$work/py.json"
python3 - "$work/rs.json" "$work/py.json" <<'PY'
import json, sys
rs, py = (json.load(open(p)) for p in sys.argv[1:3])
# Only verdicts: ours also lists tripwires it could not check (status not_checked).
key = lambda results: [(r["tripwire"], r["status"]) for r in results if r["status"] != "not_checked"]
print("ours:  ", key(rs))
print("python:", key(py))
print("same verdicts:", key(rs) == key(py))
sys.exit(0 if key(rs) == key(py) else 1)
PY
