"""Writes a tiny random Llama model with a word-level tokenizer into the folder given.

The model hub cannot be reached, so the model is made here: 2 layers, hidden size 128,
random weights from a fixed seed. It answers nonsense, fast, on two CPU cores; what the
real-engine cases test is the engine around it (scheduler, KV cache, metrics, logs), not
the words. The tokenizer is the load tools' word-level one (scripts/loadtools/
make-tokenizer.py): one word, one token, so a prompt of N words is N tokens to every tool.

Usage: python make-model.py DIR   (needs torch, transformers and tokenizers)
"""


import os
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "loadtools"))
import importlib

make_tokenizer = importlib.import_module("make-tokenizer")


# Chat requests (GuideLLM, AIPerf) need a template; the words of each message, in order.
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


def main(out: str) -> None:
    if os.path.exists(os.path.join(out, "config.json")):
        return
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
