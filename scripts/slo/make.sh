#!/usr/bin/env bash
# Makes the service-level fixtures under fixtures/slo/: runs of the simulated vLLM server
# (`inferlint-sim serve`, not a real engine) loaded by `inferlint-sim load --save-detailed`
# (which writes `vllm bench serve`'s fields, one array entry per request), each through
# `inferlint xray`, so each is a whole run folder.
#
#   sweep/cNN      concurrency 8, 16, 32 and 64, 128 requests each: the pool holds 32
#                  requests of 64 tokens, so at 64 half of them wait for a slot and TTFT
#                  jumps by about one request's length
#   time-limited   concurrency 16, 128 requests, cut by a 5-second limit: every request
#                  not back by the limit ends "no answer before the timeout", those in
#                  flight and those the loader had yet to send (it sends them at the limit
#                  and they fail at once)
#   other-setup/c32  the sweep's load at 32 on another server setup (--case vllm-hybrid)
#   repeats/rN     three repeats of the sweep's run at 16: the run-to-run noise of goodput
#
# usage: scripts/slo/make.sh   (rewrites fixtures/slo/; everything on 127.0.0.1)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
cargo build -q -p inferlint-cli -p inferlint-sim
INFERLINT="$ROOT/target/debug/inferlint"
SIM="$ROOT/target/debug/inferlint-sim"
FIX="$ROOT/fixtures/slo"

free_port() {
  python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
}

# one CASE CONCURRENCY WHAT SERVE-ARGS LOAD-ARGS
one() {
  local case="$1" c="$2" what="$3" serve="$4" load="$5"
  local out="$FIX/$case" port
  port="$(free_port)"
  rm -rf "$out"
  local serve_cmd="inferlint-sim serve --port \$PORT $serve"
  local load_cmd="inferlint-sim load http://127.0.0.1:\$PORT --num-prompts 128 --max-concurrency $c --input-len 32 --output-len 32 --save-detailed --result-file \$OUT/bench.json $load"
  set +e
  "$INFERLINT" xray -o "$out" --no-gpu --no-probe --requested "$c" \
    --serve "$SIM serve --port $port $serve" \
    -- "$SIM" load "http://127.0.0.1:$port" --num-prompts 128 --max-concurrency "$c" \
    --input-len 32 --output-len 32 --save-detailed --result-file "$out/bench.json" $load \
    > /dev/null 2>&1
  local status=$?
  set -e
  rm -f "$out/report.html" "$out/results.json"
  {
    echo "# slo / $case"
    echo
    echo "- tool: inferlint-sim load (vllm bench serve's fields, --save-detailed arrays)"
    echo "- made: $(date -u +%Y-%m-%d) by scripts/slo/make.sh"
    echo "- what it stands for: $what"
    echo "- hand-made: none: every file is as the simulated server, its load and inferlint xray wrote it."
    echo
    echo "## How"
    echo
    echo '```'
    echo "inferlint xray -o \$OUT --no-gpu --no-probe --requested $c \\"
    echo "  --serve \"$serve_cmd\" \\"
    echo "  -- $load_cmd"
    echo '```'
    echo
    echo "xray exit status: $status. report.html and results.json (inferlint's own output)"
    echo "were removed; \`inferlint report \$OUT\` makes them again."
    echo
    echo "## Files"
    echo
    for f in $(cd "$out" && ls); do
      [ "$f" = MADE.md ] && continue
      echo "- \`$f\` ($(wc -c < "$out/$f") bytes)"
    done
  } > "$out/MADE.md"
  echo "made $out (xray exit $status)"
}

for c in 8 16 32 64; do
  one "sweep/c$(printf %02d "$c")" "$c" \
    "one point of a sweep of one setup at concurrency 8, 16, 32, 64 (this one $c)" \
    "--engine vllm --speed 1" ""
done
one time-limited 16 \
  "a run cut by a time limit with requests in flight: 128 requests at concurrency 16 given 5 seconds (about six of its eight waves of 16)" \
  "--engine vllm --speed 1" "--timeout 5"
one other-setup/c32 32 \
  "the sweep's load at concurrency 32 on another setup (the vllm-hybrid case: another model and pool)" \
  "--case vllm-hybrid --speed 1" ""
for r in 1 2 3; do
  one "repeats/r$r" 16 \
    "repeat $r of three of the sweep's run at concurrency 16, for the noise of goodput" \
    "--engine vllm --speed 1" ""
done
