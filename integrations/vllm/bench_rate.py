"""Drives the plugin's `record` at a fixed rate with stand-in stats (vLLM 0.32's shapes,
iteration details on, one finished request every 8 steps), then counts what it wrote:
every step must be a step line or be counted in a gap line.

Usage: python3 bench_rate.py [CALLS-PER-SECOND [SECONDS [FILE]]]   (default 1000 60)
"""

import json
import os
import sys
import tempfile
import time
from types import SimpleNamespace as NS

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inferlint_vllm_steps as steps  # noqa: E402


def main(rate=1000.0, seconds=60.0, path=None):
    path = path or os.path.join(tempfile.mkdtemp(), "steps.jsonl")
    os.environ["INFERLINT_STEPS"] = path
    logger = steps.InferlintStepLogger(
        NS(observability_config=NS(enable_logging_iteration_details=True)))
    fin = NS(request_id="cmpl-0123456789abcdef-0", finish_reason="length",
             num_prompt_tokens=32, num_generation_tokens=32, num_cached_tokens=0,
             num_preemptions=0, queued_time=0.0012, prefill_time=0.0213,
             decode_time=0.4511, inference_time=0.4724)
    n = int(rate * seconds)
    late = 0
    t0 = time.monotonic()
    for k in range(n):
        due = t0 + k / rate
        while (now := time.monotonic()) < due:
            time.sleep(min(due - now, 0.0005))
        late = max(late, now - due)
        details = NS(iteration_index=k, num_ctx_requests=0, num_ctx_tokens=0,
                     num_generation_requests=8, num_generation_tokens=8, elapsed_ms=0.9)
        sched = NS(num_running_reqs=8, num_waiting_reqs=0, num_skipped_waiting_reqs=0,
                   kv_cache_usage=0.0123, iteration_details=details,
                   kv_cache_eviction_events=[])
        it = NS(num_generation_tokens=8, num_prompt_tokens=0, num_preempted_reqs=0,
                finished_requests=[fin] if k % 8 == 7 else [])
        logger.record(sched, it)
    elapsed = time.monotonic() - t0
    logger.close()
    lines = [json.loads(line) for line in open(path, encoding="utf-8")]
    step_lines = sum(1 for x in lines[1:] if "r" in x)
    gaps = [x for x in lines if "gap" in x]
    end = lines[-1] if "end" in lines[-1] else None
    print(f"calls {n} in {elapsed:.1f} s ({n / elapsed:.0f}/s, latest call {late * 1e3:.1f} ms "
          f"behind its time); step lines {step_lines}; gap lines {len(gaps)} dropping "
          f"{sum(g['gap'] for g in gaps)}; end line {'yes' if end else 'no'}")
    if end:
        print(f"record: {end['record_ns'] / end['calls'] / 1e3:.2f} µs a call on average "
              f"({end['calls']} calls); {os.path.getsize(path) / step_lines:.0f} bytes a step")
    return 0 if step_lines + sum(g["gap"] for g in gaps) == n and end else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(float(args[0]) if args else 1000.0, float(args[1]) if len(args) > 1 else 60.0,
                  args[2] if len(args) > 2 else None))
