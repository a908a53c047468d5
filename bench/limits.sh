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
#   - every load tool's result file (the fixtures in fixtures/loadtools) grown to 10 MB
#     and to 100 MB of per-request records (report reads it as a stream).
#
#   bench/limits.sh            every case
#   bench/limits.sh results    the load tools' result files alone
#
# INFERLINT_BIN names another build to measure (an earlier one, to compare). The result
# cases run under a cap of LIMITS_CAP_GIB (default 8) GiB of address space, so that a
# reader that takes memory in proportion to the file fails there rather than taking the
# machine's.
#
# Needs: python3 and GNU time; about 2.5 GB of free disk in $TMPDIR for the log.
set -euo pipefail
cd "$(dirname "$0")/.."
ONLY="${1:-all}"
if [ -n "${INFERLINT_BIN:-}" ]; then
  RS="$INFERLINT_BIN"
else
  cargo build --release --locked -p inferlint-cli -q
  RS="$PWD/target/release/inferlint"
fi
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

if [ "$ONLY" = all ]; then
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

fi

echo "== a load tool's result, grown (report; peak resident memory)"
grow() {
  # grow FILE HOW MB: cycles the file's per-request records until it holds about MB
  # megabytes, the fields that tell the tool first.
  python3 - "$@" <<'PY'
import itertools, json, sys
path, how, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
target = mb * 1_000_000

def size(v):
    return len(json.dumps(v)) + 2

def cycled(items, each):
    return list(itertools.islice(itertools.cycle(items), max(1, target // each)))

def dump(value, f):
    if isinstance(value, dict):
        # Small fields first: each tool's telling fields stay in its first 64 KiB.
        fields = sorted(value.items(), key=lambda kv: size(kv[1]))
        f.write("{" + ", ".join(json.dumps(k) + ": " + json.dumps(v) for k, v in fields) + "}")
    else:
        json.dump(value, f)

if how == "lines":
    lines = [l for l in open(path).read().split("\n") if l.strip()]
    each = sum(len(l) + 1 for l in lines) // len(lines)
    open(path, "w").write("\n".join(cycled(lines, each)) + "\n")
    sys.exit()
if how == "last-line":
    lines = [l for l in open(path).read().split("\n") if l.strip()]
    report = json.loads(lines[-1])
else:
    report = json.load(open(path))
if how == "empty-records":
    # The smallest record a reader takes: 4 bytes of file, a whole record in the account.
    report["benchmarks"][0]["requests"] = {"successful": [{}] * (target // 4), "errored": [], "incomplete": []}
    report["benchmarks"][0]["metrics"]["request_totals"]["successful"] = target // 4
    report["benchmarks"][0]["metrics"]["request_totals"]["total"] = target // 4
elif how == "errors-only":
    for k in [k for k, v in report.items() if isinstance(v, list)]:
        del report[k]
    report["errors"] = [""] * (target // 4)
    report["num_prompts"] = report["completed"] = target // 4
elif how == "guidellm":
    records = report["benchmarks"][0]["requests"]["successful"]
    report["benchmarks"][0]["requests"]["successful"] = cycled(records, sum(map(size, records)) // len(records))
elif how == "genai-perf":
    records = report["experiments"][0]["requests"]
    report["experiments"][0]["requests"] = cycled(records, sum(map(size, records)) // len(records))
elif how == "list":
    report = cycled(report, sum(map(size, report)) // len(report))
else:  # the engines' clients: the i-th entry of every per-request list is request i
    n = len(report["errors"])
    keys = [k for k, v in report.items() if isinstance(v, list) and len(v) == n]
    each = sum(size(report[k][i]) for k in keys for i in range(n)) // n
    for k in keys:
        report[k] = cycled(report[k], each)
    for k in ["num_prompts", "completed"]:
        if k in report:
            report[k] = len(report["errors"])
with open(path, "w") as f:
    dump(report, f)
    if how == "last-line":
        f.write("\n")
PY
}
CAP_KIB=$((${LIMITS_CAP_GIB:-8} * 1024 * 1024))
for case in \
  "guidellm/concurrent-8 guidellm.json guidellm" \
  "vllm/concurrent-16-detailed bench.json lists" \
  "sglang/concurrent-16-details bench.jsonl last-line" \
  "trtllm/concurrent-8-detailed bench.json lists" \
  "genai-perf/concurrency-8 artifacts/sim-model-openai-completions-concurrency8/profile_export.json genai-perf" \
  "aiperf/concurrency-8 aiperf/profile_export.jsonl lines" \
  "inference-perf/concurrent-8 inference-perf/per_request_lifecycle_metrics.json list" \
  "llmperf/concurrent-8 result_outputs/sim-model_32_32_individual_responses.json list" \
  "guidellm/concurrent-8 guidellm.json empty-records" \
  "vllm/concurrent-16-detailed bench.json errors-only"; do
  read -r folder file how <<<"$case"
  name="${folder%%/*}"
  case "$how" in
    empty-records) name="$name, {} records" ;;
    errors-only) name="$name, only errors" ;;
  esac
  for mb in 10 100; do
    RUN="$WORK/result"
    rm -rf "$RUN"
    cp -r "fixtures/loadtools/$folder" "$RUN"
    rm -f "$RUN/report.html"
    grow "$RUN/$file" "$how" "$mb"
    size=$(($(stat -c %s "$RUN/$file") / 1000000))
    measure "report, $name ($size MB)" \
      bash -c 'ulimit -v "$1"; exec "$2" report "$3"' _ "$CAP_KIB" "$RS" "$RUN"
    rm -rf "$RUN"
  done
done

if [ "$ONLY" = all ]; then
  measure "series /dev/zero" "$RS" series /dev/zero
fi
