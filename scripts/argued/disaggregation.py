#!/usr/bin/env python3
"""Makes fixtures/argued/vllm-0.32-disagg/<case>/ from the real shared-prefix run: what a
decode instance of a NIXL prefill/decode pair would have left, argued from vLLM 0.32's own
formats (no disaggregated run can be made on this machine: NIXL needs two instances and
an accelerator's transfer engine). Each case is the real run's boot log, before and after
readings with only the lines below changed; MADE.md says which and why.

  never-transferred  --kv-transfer-config naming NixlConnector as kv_consumer, and the
                     counters exactly as the real run left them: every prompt token was
                     prefilled here or served from the instance's own cache (T28 fails)
  transferred        NixlConnector as kv_both, and the 1,280 prompt tokens the real run
                     prefilled (9,216 less the 7,936 its prefix cache served) counted as a
                     decode instance counts them: all 1,280 loaded by transfer, none
                     computed (T28 passes)

Usage: scripts/argued/disaggregation.py   (from the repository root; no engine needed)
"""
import json
import pathlib
import re
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "fixtures/real/vllm-0.32-cpu/shared-prefix"
OUT = ROOT / "fixtures/argued/vllm-0.32-disagg"

# vLLM 0.32's repr of its KVTransferConfig dataclass, as `print()` of the non-default args
# dict writes it (run with the installed engine: KVTransferConfig(kv_connector=...,
# kv_role=...)), engine_id fixed.
KV_CONFIG = (
    "KVTransferConfig(kv_connector='NixlConnector', engine_id='decode-0', "
    "kv_buffer_device='cpu', kv_role='{role}', kv_port=14579, "
    "kv_connector_extra_config={{}}, kv_connector_module_path=None, "
    "enable_permute_local_kv=False, kv_load_failure_policy='fail')"
)

PREFIX_HITS = 7_936  # the real run's prefix_cache_hits_total delta (MADE.md)
PROMPT = 9_216  # its prompt_tokens_total delta
TRANSFERRED = PROMPT - PREFIX_HITS  # 1,280: every prompt token its own cache did not serve


def set_sample(text, name, labels, value):
    """Sets the value of one sample line (`name{...labels...} value`) of an exposition."""
    pattern = re.compile(
        r"^(" + re.escape(name) + r"\{[^}]*" + re.escape(labels) + r"[^}]*\}) (\S+)$",
        re.M,
    )
    text, n = pattern.subn(lambda m: f"{m.group(1)} {float(value)!r}", text)
    assert n == 1, (name, labels, n)
    return text


def sample(text, name, labels):
    m = re.search(
        r"^" + re.escape(name) + r"\{[^}]*" + re.escape(labels) + r"[^}]*\} (\S+)$", text, re.M
    )
    return float(m.group(1))


def make(case, role, transferred, what):
    out = OUT / case
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    boot = (SOURCE / "boot.log").read_text()
    edited = boot.replace(
        "non-default args: {",
        "non-default args: {'kv_transfer_config': " + KV_CONFIG.format(role=role) + ", ",
        1,
    )
    assert edited != boot
    (out / "boot.log").write_text(edited)
    before = json.loads((SOURCE / "before.snapshot.json").read_text())
    after = json.loads((SOURCE / "after.snapshot.json").read_text())
    (out / "before.snapshot.json").write_text(json.dumps(before))
    changed = []
    if transferred:
        text = after["text"]
        # None prefilled during the run: the counter stays at its value before it.
        computed_before = sample(
            before["text"], "vllm:prompt_tokens_by_source_total", 'source="local_compute"'
        )
        edits = [
            ("vllm:prompt_tokens_by_source_total", 'source="local_compute"', computed_before),
            ("vllm:prompt_tokens_by_source_total", 'source="external_kv_transfer"', TRANSFERRED),
            ("vllm:prompt_tokens_cached_by_source_total", 'source="p2p"', TRANSFERRED),
            ("vllm:external_prefix_cache_hits_total", "", TRANSFERRED),
            ("vllm:external_prefix_cache_queries_total", "", TRANSFERRED),
            ("vllm:prompt_tokens_cached_total", "", PREFIX_HITS + TRANSFERRED),
        ]
        for name, labels, value in edits:
            text = set_sample(text, name, labels, value)
            changed.append(f"- `{name}{{{labels}}}` set to {value:g}" if labels else f"- `{name}` set to {value:g}")
        after["text"] = text
    (out / "after.snapshot.json").write_text(json.dumps(after))
    changes = (
        "\n".join(changed)
        + "\n\n`local_compute` keeps its value of the before reading: the instance prefilled none"
        + " of the run's prompt tokens."
        if changed
        else "- none: the counters are the real run's"
    )
    (out / "MADE.md").write_text(f"""# argued vLLM / disaggregation / {case}

- status: **argued**, not recorded. No disaggregated run can be made on this machine
  (NIXL moves KV between two instances' accelerators); the files are the real
  `fixtures/real/vllm-0.32-cpu/shared-prefix` run (vLLM 0.32.0, CPU build) with the
  changes below, made by `scripts/argued/disaggregation.py`. Replace with a real decode
  instance's recording when one can be made.
- what it stands for: {what}

## Changes, each argued from vLLM 0.32's source

- `boot.log`: the non-default args line opens with `'kv_transfer_config':
  {KV_CONFIG.format(role=role)}`, the repr vLLM 0.32's `KVTransferConfig` prints
  (`vllm/config/kv_transfer.py`; printed by `log_non_default_args`,
  `vllm/entrypoints/serve/utils/api_utils.py`).
{changes}

A decode instance counts the prompt tokens whose KV it loaded from the prefiller as
`prompt_tokens_by_source{{source="external_kv_transfer"}}` and those it prefilled as
`local_compute` (`vllm/v1/metrics/stats.py` `PromptTokenStats`: computed + local cache
hit + external transfer = total); NIXL's hits are tier `p2p`
(`nixl/connector.py` `_cache_hit_source`) in `prompt_tokens_cached_by_source`. It
counts them when it admits the request (`vllm/v1/core/sched/scheduler.py`,
`prefill_stats.set`): every prompt token its own cache did not serve is to be loaded
(`nixl/pull_scheduler.py` `get_num_new_matched_tokens`, no backoff for this dense model),
so none is counted as computed, though the scheduler recomputes the last one after the
load to sample from. Of the 9,216 prompt tokens of 32 requests of 288, its own prefix
cache served 7,936 (the real run's hits) and transfer {TRANSFERRED:,}.
""")


make("never-transferred", "kv_consumer", False,
     "a decode instance (kv_consumer) the load reached without the proxy's kv_transfer_params: every request was prefilled where it landed")
make("transferred", "kv_both", True,
     "a decode instance (kv_both, as vLLM's NIXL examples start both sides) that loaded each prompt's KV from the prefiller")
