"""Summarises a run folder's steps.jsonl (inferlint.steps/1, docs/steps.md) for its
MADE.md, beside what vLLM's own counters moved (moved.py's reading): the per-step sums
must equal the counters' moves when no step was dropped.

Usage: python3 steps_made.py RUN-FOLDER
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from moved import counters  # noqa: E402


def main(folder):
    path = f"{folder}/steps.jsonl"
    lines = [json.loads(line) for line in open(path, encoding="utf-8")]
    header, rest = lines[0], lines[1:]
    steps = [x for x in rest if "fin" not in x and "gap" not in x and "end" not in x]
    fins = [x for x in rest if "fin" in x]
    gaps = [x for x in rest if "gap" in x]
    end = [x for x in rest if "end" in x]
    moved = {}
    before, after = counters(f"{folder}/before.snapshot.json"), counters(f"{folder}/after.snapshot.json")
    for name in ("vllm:num_preemptions_total", "vllm:generation_tokens_total",
                 "vllm:prompt_tokens_total", "vllm:request_success_total"):
        moved[name] = after.get(name, 0) - before.get(name, 0)
    total = lambda key, xs=steps: sum(x.get(key, 0) for x in xs)
    print(f"- header: schema `{header['schema']}`, vLLM {header['engine_version']}, "
          f"iteration details {str(header['iteration_details']).lower()}, "
          f"unread {header['unread'] or 'none'}")
    print(f"- lines: {len(lines)} ({len(steps)} steps, {len(fins)} finished requests, "
          f"{len(gaps)} gaps, {len(end)} end); steps dropped: {sum(g['gap'] for g in gaps)}")
    print(f"- steps with iteration details: {sum('i' in x for x in steps)}; with a prefill "
          f"beside decodes (pr > 0 and dr > 0): {sum(x.get('pr', 0) > 0 and x.get('dr', 0) > 0 for x in steps)}; "
          f"with requests waiting (w > 0): {sum(x.get('w', 0) > 0 for x in steps)}; "
          f"with deferred ones (d > 0): {sum(x.get('d', 0) > 0 for x in steps)}")
    idle = [x for x in steps if x.get("r") == 0 and x.get("w", 0) + x.get("d", 0) > 0]
    print(f"- steps in the whole file with none running and some waiting or deferred (r = 0, w + d > 0): "
          f"{len(idle)}" + (f", from t {idle[0]['t']} to t {idle[-1]['t']} s, at most "
                           f"{max(x.get('w', 0) + x.get('d', 0) for x in idle)} held" if idle else ""))
    print(f"- largest prefill in one step: {max((x.get('pt', 0) for x in steps), default=0)} tokens; "
          f"largest kv use: {max((x.get('kv', 0) for x in steps), default=0)}")
    # The counters moved between the two readings; the steps recorded between the same
    # two moments (same monotonic clock: the snapshots' t_mono_ns) are summed beside them.
    lo = json.load(open(f"{folder}/before.snapshot.json"))["t_mono_ns"]
    hi = json.load(open(f"{folder}/after.snapshot.json"))["t_mono_ns"]
    inside = lambda xs: [x for x in xs if lo <= header["t_mono_ns"] + x["t"] * 1e9 <= hi]
    print(f"- between the two readings: {len(inside(steps))} steps, {len(inside(fins))} finished "
          f"request lines, {len(inside(gaps))} gaps")
    for key, name in (("pre", "vllm:num_preemptions_total"), ("gen", "vllm:generation_tokens_total"),
                      ("prompt", "vllm:prompt_tokens_total")):
        print(f"- sum of the steps' `{key}` between the readings: {total(key, inside(steps)):g} "
              f"(whole file {total(key):g}); `{name}` moved {moved[name]:g}")
    print(f"- finished request lines between the readings: {len(inside(fins))}; "
          f"`vllm:request_success_total` moved {moved['vllm:request_success_total']:g}; "
          f"sum of their `pre`: {total('pre', inside(fins)):g}")
    if end:
        e = end[0]
        ms = total("ms")
        share = f"{e['record_ns'] / 1e6 / ms:.3%} of the steps' elapsed_ms ({ms:.1f} ms)" if ms else "no elapsed_ms"
        print(f"- end: {e['steps']} steps, {e['dropped']} dropped, {e['calls']} record calls, "
              f"{e['record_ns'] / e['calls'] / 1e3:.1f} µs a call on average, {share}")
    else:
        print("- end: no end line (the server did not shut down cleanly)")
    size = os.path.getsize(path)
    print(f"- size: {size} bytes; {size / max(len(steps), 1):.0f} bytes a step, "
          "the finished-request lines and the header included")


if __name__ == "__main__":
    main(sys.argv[1])
