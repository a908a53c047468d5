"""Writes a small word-level tokenizer, made here and offline, into the folder given.

The load tools want a Hugging Face tokenizer to make prompts of a given length and count
tokens; the model hub cannot be reached. Each token is one word and words are split on
whitespace only, so a prompt of N tokens is N words: the simulated server
(`inferlint-sim serve`) counts a prompt's tokens as its words, and each token it
generates is one word, so client and server count the same tokens.

Usage: python make-tokenizer.py DIR   (needs `tokenizers` and `transformers`)
"""

import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

# The words the simulated server answers with, then plain filler words.
ANSWER_WORDS = ["the", "sky", "is", "clear", "and", "wind", "calm", "today", "simulated", "run"]
FILLER = [f"w{i}" for i in range(2000)]


def main(out: str) -> None:
    vocab = {"[UNK]": 0, "<eos>": 1}
    for word in ANSWER_WORDS + FILLER:
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # Decoding joins the words with one space, so decode(encode(text)) has as many words.
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    # "[UNK]" (a word the vocabulary lacks) is deliberately not a special token: tools
    # that cut a prompt from real text decode it with skip_special_tokens, and a prompt of
    # N unknown words must still be N words.
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<eos>",
        model_max_length=2048,
    )
    fast.save_pretrained(out)
    ids = fast.encode("w1 w2 the sky Lorem, ipsum.", add_special_tokens=False)
    check = fast.decode(ids, skip_special_tokens=True)
    assert check.split() == ["w1", "w2", "the", "sky", "[UNK]", "[UNK]"], check


if __name__ == "__main__":
    main(sys.argv[1])
