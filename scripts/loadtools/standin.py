"""A stand-in load client that writes the result files of a load tool that cannot run here.

TensorRT-LLM's benchmark_serving needs the tensorrt_llm package (CUDA), GenAI-Perf needs
Triton's perf_analyzer binary, LLMPerf needs Ray and a tokenizer from the model hub. This
client sends the same kind of load to the server for real (streamed OpenAI requests, a
fixed number at once, through `inferlint xray`, so the server's files are real) and
writes its own measurements in the file layout, field names and computations read from
each tool's source (named in --format's help and in docs/loadtools.md). The files are
therefore made here by this script, not by the tool: every fixture made with it says so.

Python standard library only.

Usage: python standin.py --format trtllm|genai-perf|llmperf --url URL --model M
         --num-prompts N --concurrency C --input-len P --output-len O --out DIR
"""

import argparse
import http.client
import json
import math
import random
import re
import statistics
import threading
import time
import urllib.parse
from datetime import datetime


def percentile(data, p):
    """numpy's default (linear) percentile; NaN for no data, as numpy gives."""
    if not data:
        return float("nan")
    s = sorted(data)
    k = (len(s) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def mean(data):
    return statistics.fmean(data) if data else float("nan")


def stdev_pop(data):  # numpy's np.std (ddof 0)
    return statistics.pstdev(data) if data else float("nan")


def stdev_sample(data):  # pandas' Series.std (ddof 1)
    return statistics.stdev(data) if len(data) > 1 else float("nan")


class Result:
    def __init__(self):
        self.ok = False
        self.status = None
        self.error = ""
        self.start_ns = 0
        self.start = 0.0
        self.chunk_times = []  # perf_counter of each content chunk
        self.chunk_ns = []
        self.chunks = []  # raw SSE events
        self.text = ""
        self.prompt_tokens = None
        self.completion_tokens = None
        self.latency = 0.0
        self.payload = ""


def one_request(url, path, body, chat):
    r = Result()
    u = urllib.parse.urlparse(url)
    r.payload = json.dumps(body)
    r.start_ns = time.time_ns()
    r.start = time.perf_counter()
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        conn.request("POST", path, r.payload, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        r.status = resp.status
        if resp.status != 200:
            r.error = resp.reason or str(resp.status)
            resp.read()
            r.latency = time.perf_counter() - r.start
            return r
        buf = b""
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            data = line[6:]
            now, now_ns = time.perf_counter(), time.time_ns()
            r.chunks.append((now_ns, line.decode() + "\n\n"))
            if data == b"[DONE]":
                continue
            event = json.loads(data)
            if event.get("usage"):
                r.prompt_tokens = event["usage"]["prompt_tokens"]
                r.completion_tokens = event["usage"]["completion_tokens"]
            for c in event.get("choices", []):
                piece = c.get("delta", {}).get("content") if chat else c.get("text")
                if piece:
                    r.text += piece
                    r.chunk_times.append(now)
                    r.chunk_ns.append(now_ns)
        r.latency = time.perf_counter() - r.start
        r.ok = bool(r.chunk_times)
        if not r.ok:
            r.error = "no output"
        conn.close()
    except Exception as e:  # noqa: BLE001 - a failed request is a result
        r.error = f"{type(e).__name__}: {e}"
        r.latency = time.perf_counter() - r.start
    return r


def run_load(args, chat):
    rng = random.Random(0)
    path = "/v1/chat/completions" if chat else "/v1/completions"
    prompts = [" ".join(f"w{rng.randrange(2000)}" for _ in range(args.input_len))
               for _ in range(args.num_prompts)]

    def body(prompt):
        b = {"model": args.model, "max_tokens": args.output_len, "stream": True,
             "stream_options": {"include_usage": True}, "ignore_eos": True}
        if chat:
            b["messages"] = [{"role": "user", "content": prompt}]
        else:
            b["prompt"] = prompt
        return b

    results = [None] * len(prompts)
    lock = threading.Lock()
    next_index = [0]

    def worker():
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(prompts):
                return
            results[i] = one_request(args.url, path, body(prompts[i]), chat)

    start = time.perf_counter()
    start_ns = time.time_ns()
    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.perf_counter() - start, start_ns, time.time_ns()


def write_json(path, value, **kw):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, **kw)


def trtllm(args):
    """tensorrt_llm/serve/scripts/benchmark_serving.py: benchmark() and main()."""
    print("Starting initial single prompt test run...")
    test = one_request(args.url, "/v1/completions",
                       {"model": args.model, "prompt": "w1 " * args.input_len,
                        "max_tokens": args.output_len, "stream": True,
                        "stream_options": {"include_usage": True}, "ignore_eos": True}, False)
    if not test.ok:
        raise SystemExit(f"Initial test run failed - Please make sure benchmark arguments "
                         f"are correctly specified. Error: {test.error}")
    print("Initial test run completed. Starting main benchmark run...")
    results, dur, _, _ = run_load(args, chat=False)
    ok = [r for r in results if r.ok]
    out_lens = [(r.completion_tokens or 0) if r.ok else 0 for r in results]
    ttfts = [r.chunk_times[0] - r.start if r.ok else 0.0 for r in results]
    itls = [[b - a for a, b in zip(r.chunk_times, r.chunk_times[1:])] if r.ok else []
            for r in results]
    tpots = [(r.latency - (r.chunk_times[0] - r.start)) / (n - 1)
             for r, n in zip(results, out_lens) if r.ok and n > 1]
    total_in = sum(r.prompt_tokens or args.input_len for r in ok)
    total_out = sum(out_lens)
    completed = len(ok)
    print("{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="))
    print("{:<40} {:<10}".format("Total requests:", len(results)))
    print("{:<40} {:<10}".format("Successful requests:", completed))
    print("{:<40} {:<10}".format("Failed requests:", len(results) - completed))
    print("{:<40} {:<10.2f}".format("Benchmark duration (s):", dur))
    print("{:<40} {:<10}".format("Total input tokens:", total_in))
    print("{:<40} {:<10}".format("Total generated tokens:", total_out))
    result = {
        "date": datetime.now().strftime("%Y%m%d-%H%M%S"),
        "backend": "openai",
        "model_id": args.model,
        "tokenizer_id": args.tokenizer,
        "num_prompts": args.num_prompts,
        "duration": dur,
        "completed": completed,
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": completed / dur,
        "request_goodput:": None,
        "output_throughput": total_out / dur,
        "total_token_throughput": (total_in + total_out) / dur,
        "user_throughput": mean([n / r.latency for r, n in zip(results, out_lens) if r.ok]),
        "avg_decoded_tokens_per_iter": {"mean": 0.0, "min": 0.0, "max": 0.0,
                                        "median": 0.0, "std": 0.0, "percentiles": {"p99": 0.0}},
        "input_lens": [args.input_len] * len(results),
        "output_lens": out_lens,
        "ttfts": ttfts,
        "itls": itls,
        "e2els": [r.latency if r.ok else 0.0 for r in results],
        "generated_texts": [r.text for r in results],
        "errors": [r.error for r in results],
    }
    ok_ttfts = [t for r, t in zip(results, ttfts) if r.ok]
    all_itls = [x for r, l in zip(results, itls) for x in l]
    for name, data in (("ttft", ok_ttfts), ("tpot", tpots), ("itl", all_itls)):
        ms = [x * 1000 for x in data] or [0.0]
        result[f"std_{name}_ms"] = stdev_pop(ms)
        result[f"min_{name}_ms"] = min(ms)
        result[f"max_{name}_ms"] = max(ms)
        result[f"mean_{name}_ms"] = mean(ms)
        result[f"median_{name}_ms"] = percentile(ms, 50)
        result[f"p99_{name}_ms"] = percentile(ms, 99)
    result["request_rate"] = "inf"
    result["burstiness"] = 1.0
    result["max_concurrency"] = args.concurrency
    write_json(f"{args.out}/{args.result_filename}", result)
    print("=" * 50)


def llmperf(args):
    """token_benchmark_ray.py (get_token_throughput_latencies, metrics_summary,
    run_token_benchmark), src/llmperf/utils.py (LLMPerfResults, flatten_dict),
    src/llmperf/common_metrics.py, the openai chat client."""
    results, _, _, _ = run_load(args, chat=True)
    individual = []
    for r in results:
        n_out = len(r.text.split()) if r.ok else 0  # its tokenizer: one token per word
        ttft = r.chunk_times[0] - r.start if r.ok else 0
        gaps = [b - a for a, b in zip(r.chunk_times, r.chunk_times[1:])]
        m = {
            "error_code": None if r.ok else r.status,
            "error_msg": "" if r.ok else r.error,
            "inter_token_latency_s": (sum(gaps) + ttft) / n_out if n_out else 0,
            "ttft_s": ttft,
            "end_to_end_latency_s": r.latency if r.ok else 0,
            "request_output_throughput_token_per_s": n_out / r.latency if r.ok and r.latency > 0 else 0,
            "number_total_tokens": args.input_len + n_out,
            "number_output_tokens": n_out,
            "number_input_tokens": args.input_len,
        }
        individual.append(m)
    # Its loop ends when enough requests came back; the span is its own start..end.
    span = max(r.start + r.latency for r in results) - min(r.start for r in results)
    ok = [m for m in individual if m["error_code"] is None]
    ret = {}
    for key in ("inter_token_latency_s", "ttft_s", "end_to_end_latency_s",
                "request_output_throughput_token_per_s", "number_input_tokens",
                "number_output_tokens"):
        series = [m[key] for m in ok]
        ret[key] = {"quantiles": {f"p{q}": percentile(series, q) for q in (25, 50, 75, 90, 95, 99)},
                    "mean": mean(series),
                    "min": min(series) if series else float("nan"),
                    "max": max(series) if series else float("nan"),
                    "stddev": stdev_sample(series)}
    codes = [m["error_code"] for m in individual if m["error_code"] is not None]
    ret["num_requests_started"] = len(individual)
    ret["error_rate"] = len(codes) / len(individual) if individual else 0
    ret["number_errors"] = len(codes)
    freq = {}
    for c in codes:
        freq[c] = freq.get(c, 0) + 1
    ret["error_code_frequency"] = str(freq)
    ret["mean_output_throughput_token_per_s"] = sum(m["number_output_tokens"] for m in ok) / span
    ret["num_completed_requests"] = len(ok)
    ret["num_completed_requests_per_min"] = len(ok) / span * 60
    name = re.sub(r"-{2,}", "-", re.sub(r"[^\w\d-]+", "-", f"{args.model}_{args.input_len}_{args.output_len}"))
    summary = {"version": "2023-08-31", "name": f"{name}_summary", "model": args.model,
               "mean_input_tokens": args.input_len, "stddev_input_tokens": 0,
               "mean_output_tokens": args.output_len, "stddev_output_tokens": 0,
               "num_concurrent_requests": args.concurrency,
               "additional_sampling_params": {"ignore_eos": True},
               "results": ret, "timestamp": int(time.time())}

    def flatten(d, parent=""):
        items = {}
        for k, v in d.items():
            key = f"{parent}_{k}" if parent else k
            if isinstance(v, dict):
                items.update(flatten(v, key))
            else:
                items[key] = v
        return items

    write_json(f"{args.out}/{name}_summary.json", flatten(summary), indent=4, default=str)
    write_json(f"{args.out}/{name}_individual_responses.json", individual, indent=4)
    print(f"Number Of Errored Requests: {len(codes)}")
    print(f"Number Of Completed Requests: {len(ok)}")


def genai_perf(args):
    """perf_analyzer's profile export (as genai_perf/profile_data_parser reads it) and
    genai_perf/export_data/json_exporter.py with metrics/statistics.py."""
    results, dur, start_ns, end_ns = run_load(args, chat=False)
    requests = []
    for r in results:
        requests.append({
            "timestamp": r.start_ns,
            "request_inputs": {"payload": r.payload},
            "response_timestamps": [t for t, _ in r.chunks],
            "response_outputs": [{"response": text} for _, text in r.chunks],
        })
    export = {"experiments": [{"experiment": {"mode": "concurrency", "value": args.concurrency},
                               "requests": requests,
                               "window_boundaries": [start_ns, end_ns]}],
              "version": ""}
    write_json(f"{args.out}/profile_export.json", export, indent=2)
    ok = [r for r in results if r.ok]

    def stats(unit, data):
        d = {"unit": unit, "avg": mean(data)}
        for p in (1, 5, 10, 25, 50, 75, 90, 95, 99):
            d[f"p{p}"] = percentile(data, p)
        d["min"], d["max"], d["std"] = min(data), max(data), stdev_pop(data)
        return d

    lat = [r.latency * 1000 for r in ok]
    ttft = [(r.chunk_times[0] - r.start) * 1000 for r in ok]
    ttst = [(r.chunk_times[1] - r.chunk_times[0]) * 1000 for r in ok if len(r.chunk_times) > 1]
    osl = [len(r.text.split()) for r in ok]
    itl = [(r.latency * 1000 - t) / (n - 1) for r, t, n in zip(ok, ttft, osl) if n > 1]
    out = {
        "request_throughput": {"unit": "requests/sec", "avg": len(ok) / dur},
        "request_latency": stats("ms", lat),
        "request_count": {"unit": "count", "avg": len(ok)},
        "time_to_first_token": stats("ms", ttft),
        "time_to_second_token": stats("ms", ttst),
        "inter_token_latency": stats("ms", itl),
        "output_token_throughput": {"unit": "tokens/sec", "avg": sum(osl) / dur},
        "output_token_throughput_per_user": stats("tokens/sec/user", [n / (r.latency) for r, n in zip(ok, osl)]),
        "output_sequence_length": stats("tokens", osl),
        "input_sequence_length": stats("tokens", [args.input_len] * len(ok)),
        "input_config": {"model": [args.model], "endpoint_type": "completions",
                         "streaming": True, "url": args.url.split("://", 1)[-1],
                         "concurrency": args.concurrency, "request_count": args.num_prompts,
                         "synthetic_input_tokens_mean": args.input_len,
                         "synthetic_input_tokens_stddev": 0,
                         "output_tokens_mean": args.output_len,
                         "tokenizer": args.tokenizer,
                         "extra_inputs": {"ignore_eos": True}},
    }
    with open(f"{args.out}/profile_export_genai_perf.json", "w") as f:
        f.write(json.dumps(out, indent=2))
    print(f"Request count: {len(ok)}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--format", required=True, choices=["trtllm", "genai-perf", "llmperf"])
    p.add_argument("--url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--tokenizer", default="")
    p.add_argument("--num-prompts", type=int, default=32)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--input-len", type=int, default=32)
    p.add_argument("--output-len", type=int, default=32)
    p.add_argument("--out", required=True)
    p.add_argument("--result-filename", default="bench.json")
    args = p.parse_args()
    import os
    os.makedirs(args.out, exist_ok=True)
    {"trtllm": trtllm, "llmperf": llmperf, "genai-perf": genai_perf}[args.format](args)


if __name__ == "__main__":
    main()
