"""A tokenizer made here, for the trainer scripts (no hub download).

A byte-level BPE trained with ``tokenizers`` on the episodes' own text, with TRL's copy of the
Qwen2.5 chat template (it renders tools, and both TRL and verl's ``hermes`` parser read its
``<tool_call>`` blocks). There is no word splitting, so BPE merges whole runs of the repeated text
and the sequences are short; any other text still encodes, byte by byte.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

# The file trl.chat_template_utils reads (and compares a tokenizer's template with), read here
# without importing trl (seconds of imports that the verl script does not need).
_trl = importlib.util.find_spec("trl")
assert _trl is not None and _trl.submodule_search_locations, "trl is not installed in this venv"
qwen2_5_chat_template = (
    Path(next(iter(_trl.submodule_search_locations))) / "chat_templates" / "qwen2_5.jinja"
).read_text(encoding="utf-8")

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def blank_tokenizer() -> PreTrainedTokenizerFast:
    """A tokenizer with no vocabulary, only to render the chat template to text."""
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.BPE()), chat_template=qwen2_5_chat_template
    )


def make_tokenizer(corpus: list[str], vocab_size: int = 6000) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on ``corpus``, eos ``<|im_end|>``, with the Qwen2.5 chat
    template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        corpus,
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=SPECIAL,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tok.add_tokens(MARKERS)  # not special: they must survive decoding for the tool-call parsers
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=qwen2_5_chat_template,
    )
