"""Writes a tiny random Llama model with a word-level tokenizer into the folder given.

The model hub cannot be reached, so the model is made here: 2 layers, hidden size 128,
random weights from a fixed seed. It answers nonsense, fast, on two CPU cores; what the
real-engine cases test is the engine around it (scheduler, KV cache, metrics, logs), not
the words. The tokenizer is the load tools' word-level one (scripts/loadtools/
make-tokenizer.py): one word, one token, so a prompt of N words is N tokens to every tool.

It also writes DIR/stops/, a generation config (with the model's config beside it, which
vLLM needs to read it) whose stop tokens are one token id in sixteen: a server given
`--generation-config DIR/stops` ends an answer at about one token in sixteen, whatever
length the load tool asked for, unless the request says ignore_eos: what a real model's
end-of-sequence does to a load tool that does not send it.

Usage: python make-model.py DIR   (needs torch, transformers and tokenizers)
"""


import json
import os
import shutil
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "loadtools"))
import importlib

make_tokenizer = importlib.import_module("make-tokenizer")


# Chat requests (GuideLLM, AIPerf) need a template; the words of each message, in order.
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


def main(out: str) -> None:
    if not os.path.exists(os.path.join(out, "config.json")):
        make_model(out)
    stops = os.path.join(out, "stops")
    if not os.path.exists(os.path.join(stops, "generation_config.json")):
        os.makedirs(stops, exist_ok=True)
        shutil.copy(os.path.join(out, "config.json"), stops)
        tok = PreTrainedTokenizerFast.from_pretrained(out)
        config = {"eos_token_id": list(range(tok.eos_token_id, len(tok), 16))}
        with open(os.path.join(stops, "generation_config.json"), "w") as f:
            json.dump(config, f)


def make_model(out: str) -> None:
    make_tokenizer.main(out)
    tok = PreTrainedTokenizerFast.from_pretrained(out)
    tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


if __name__ == "__main__":
    main(sys.argv[1])
