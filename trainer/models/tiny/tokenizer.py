"""A byte-level BPE tokenizer trained here, on the envs' own text (no download).

Byte-level BPE decodes any id sequence back to exactly the bytes that were encoded, so the text of a
sampled reply, rendered into the next turn's chat, extends the previous turn's text exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .chat_template import CHAT_TEMPLATE, END, PAD, SPECIAL_TOKENS


def train_tokenizer(corpus: Iterable[str], vocab_size: int):
    """A ``PreTrainedTokenizerFast`` with the tiny chat template, ``<|end|>`` as EOS and ``<|pad|>`` as pad."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(corpus, trainer)
    return wrap_tokenizer(core)


def wrap_tokenizer(core):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token=END, pad_token=PAD, chat_template=CHAT_TEMPLATE,
                                   clean_up_tokenization_spaces=False, padding_side="left")


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))
