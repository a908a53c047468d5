#!/usr/bin/env bash
# Peak memory and time of inferlint on hostile input, with GNU time: what the bounds in
# docs/recording.md hold in practice. Each case prints its exit status, the last line it
# printed, the wall time and the peak resident memory.
#
#   - a /metrics page of 50 MB of short samples (refused at the 100,000-sample cap),
#     an 8 MB page of 99,000 labelled samples (read), a 61 MB page of 99,000 samples
#     with long labels (read: the worst the two bounds allow), and a 250 MB page
#     (refused at 64 MiB), served by python3 -m http.server;
#   - a 2 GB boot log (check-log reads it line by line);
#   - a series with "running": 1e20 (report) and /dev/zero as a series;
#   - a GuideLLM result grown to 16,384 request records, read whole (report).
#
# Needs: python3 and GNU time; about 2.5 GB of free disk in $TMPDIR for the log.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p inferlint-cli -q
RS="$PWD/target/release/inferlint"
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

measure() {
  local name="$1"
  shift
  local status=0
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >"$WORK/out" 2>"$WORK/err" || status=$?
  read -r seconds kib < <(tail -1 "$WORK/time")
  local said
  said="$( (cat "$WORK/out" "$WORK/err") | grep -v '^Command exited' | tail -1 | cut -c1-110)"
  printf '%-34s exit %-3s %7ss %8s MiB  %s\n' "$name" "$status" "$seconds" "$((kib / 1024))" "$said"
}

echo "== scrapes (snapshot of a page served by python3 -m http.server)"
mkdir -p "$WORK/short" "$WORK/labelled" "$WORK/at-the-bounds" "$WORK/huge"
python3 - "$WORK" <<'PY'
import sys
work = sys.argv[1]
with open(f"{work}/short/metrics", "w") as f:
    f.write("vllm:num_requests_running 1\n")
    n, size = 0, 0
    while size < 50_000_000:
        line = f"a{n} 1\n"
        f.write(line)
        size += len(line)
        n += 1
with open(f"{work}/labelled/metrics", "w") as f:
    f.write("vllm:num_requests_running 1\n")
    for n in range(99_000):
        f.write(f'vllm:request_latency_bucket{{engine="{n % 8}",model_name="some-model",le="{n}"}} {n}\n')
with open(f"{work}/at-the-bounds/metrics", "w") as f:
    f.write("vllm:num_requests_running 1\n")
    long = "v" * 150
    for n in range(99_000):
        f.write(f'vllm:x{{a="{long}{n}",b="{long}",c="{long}",d="{long}"}} {n}\n')
with open(f"{work}/huge/metrics", "w") as f:
    block = "# " + "x" * 1021 + "\n"
    f.write("vllm:num_requests_running 1\n")
    for _ in range(250_000):
        f.write(block)
PY
for case in short labelled at-the-bounds huge; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -m http.server "$port" --bind 127.0.0.1 --directory "$WORK/$case" >/dev/null 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && break
    python3 -c 'import time; time.sleep(0.1)'
  done
  size=$(du -m "$WORK/$case/metrics" | cut -f1)
  measure "snapshot, $case page ($size MB)" "$RS" snapshot "http://127.0.0.1:$port" -o "$WORK/$case.json"
  kill "$SERVER_PID"
  SERVER_PID=""
done

echo "== a 2 GB boot log"
LOG="$WORK/big.log"
python3 - "$LOG" <<'PY'
import sys
head = "[TensorRT-LLM] TensorRT LLM version: 1.3.0rc29\n"
line = "[10/01/2026-01:43:03] [TRT-LLM] [I] iteration 123456: 8 requests, 32 tokens, nothing to see here\n"
with open(sys.argv[1], "w") as f:
    f.write(head)
    block = line * 10_000
    for _ in range(2_000_000_000 // len(block)):
        f.write(block)
PY
measure "check-log, 2 GB log" "$RS" check-log "$LOG"
rm -f "$LOG"

echo "== series and devices"
RECORDED="${INFERLINT_RECORDED:-../shared/recorded}"
RUN="$WORK/run"
cp -r fixtures/sim/vllm-hybrid "$RUN"
rm -f "$RUN/report.html"
python3 - "$RUN/run.series.jsonl" <<'PY'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
for i, l in enumerate(lines):
    if '"running": 10.0' in l:
        lines[i] = l.replace('"running": 10.0', '"running": 1e20', 1)
        break
open(p, "w").write("\n".join(lines))
PY
measure "report, running 1e20" "$RS" report "$RUN"

echo "== a load tool's result"
BIG="$WORK/guidellm"
cp -r fixtures/loadtools/guidellm/concurrent-8 "$BIG"
python3 - "$BIG/guidellm.json" <<'PY'
import itertools, json, sys
p = sys.argv[1]
report = json.load(open(p))
requests = report["benchmarks"][0]["requests"]
requests["successful"] = list(itertools.islice(itertools.cycle(requests["successful"]), 16384))
json.dump(report, open(p, "w"))
PY
size=$(du -m "$BIG/guidellm.json" | cut -f1)
measure "report, 16,384 requests ($size MB)" "$RS" report "$BIG"
measure "series /dev/zero" "$RS" series /dev/zero
