"""Prints what moved on the server between a run folder's two readings, from vLLM's own
counters (after minus before, every label summed unless it is split out below), and the
pool the boot log announced. This is the ground truth a case's MADE.md records and its
test argues from: what the engine counted, not what inferlint made of it.

Usage: python3 moved.py RUN-FOLDER
"""

import json
import re
import sys
from collections import defaultdict

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')
LABEL = re.compile(r'(\w+)="([^"]*)"')


def counters(path):
    text = json.load(open(path))["text"]
    out = defaultdict(float)
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or line.startswith("#"):
            continue
        name, labels, value = m.group(1), dict(LABEL.findall(m.group(2) or "")), m.group(3)
        try:
            value = float(value)
        except ValueError:
            continue
        out[name] += value
        if name == "vllm:request_success_total":
            out[f"{name}[{labels.get('finished_reason')}]"] += value
        if name == "vllm:spec_decode_num_accepted_tokens_per_pos_total":
            out[f"{name}[{labels.get('position')}]"] += value
    return out


def main(folder):
    before = counters(f"{folder}/before.snapshot.json")
    after = counters(f"{folder}/after.snapshot.json")
    for name in [
        "vllm:request_success_total",
        "vllm:request_success_total[length]",
        "vllm:request_success_total[stop]",
        "vllm:request_success_total[abort]",
        "vllm:request_success_total[error]",
        "vllm:num_preemptions_total",
        "vllm:prompt_tokens_total",
        "vllm:generation_tokens_total",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:admission_rejections_total",
        # Speculative decoding's counters (only on a server started with a speculative
        # config).
        "vllm:spec_decode_num_drafts_total",
        "vllm:spec_decode_num_draft_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_total",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total[0]",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total[1]",
        "vllm:spec_decode_num_accepted_tokens_per_pos_total[2]",
    ]:
        if name in after or name in before:
            print(f"- `{name}`: {after.get(name, 0) - before.get(name, 0):g}")
    try:
        for line in open(f"{folder}/boot.log", errors="replace"):
            if " KV cache size: " in line or "GiB for KV cache on node" in line:
                print(f"- boot log: `{line.split('] ', 1)[-1].strip()}`")
    except FileNotFoundError:
        pass


if __name__ == "__main__":
    main(sys.argv[1])
