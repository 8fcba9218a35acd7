"""Building a random-weight model directory of a real architecture, with a tokenizer and chat template made here.

The directory is what ``from_pretrained`` reads from a downloaded checkpoint: ``config.json``,
``model.safetensors``, ``generation_config.json``, ``tokenizer.json``, ``tokenizer_config.json`` and
``chat_template.jinja``. Builds are cached under ``cache_dir/<family>-<size>-<seed>-<hash of the builder>``
(the same arguments give the same bytes, so a concurrent builder writing the same entry is harmless) and
copied into the caller's directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import torch

from .corpus import corpus
from .families import SIZES, Family, Size, family, model_config

TEMPLATES = Path(__file__).with_name("templates")
_VERSION = "1"  # bump when a build changes for the same arguments (templates are hashed in already)


def default_cache_dir() -> Path:
    """``$AGENTGYM_CACHE/models``, else ``~/.cache/agentgym/models``."""
    root = os.environ.get("AGENTGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentgym")
    return Path(root) / "models"


def chat_template(name: str) -> str:
    """The chat template written here for family ``name`` (jinja source)."""
    return (TEMPLATES / family(name).template_file).read_text()


def build_random_model(family_name: str, directory: str | Path | None, *, size: str = "tiny", seed: int = 0,
                       cache_dir: str | Path | None = None) -> Path:
    """Write a random-weight model of ``family_name`` (one of :data:`FAMILIES`) into ``directory``; return it.

    ``directory=None`` returns the cached build itself (treat it as read-only). The model loads with
    ``AutoModelForCausalLM.from_pretrained`` / ``AutoTokenizer.from_pretrained`` like a downloaded
    checkpoint of the family; weights are drawn from ``seed``.
    """
    spec = family(family_name)
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; expected one of {', '.join(SIZES)}")
    key = hashlib.sha256(f"{_VERSION}\0{chat_template(family_name)}".encode()).hexdigest()[:12]
    cached = Path(cache_dir or default_cache_dir()) / f"{family_name}-{size}-{seed}-{key}"
    if not (cached / "model.safetensors").exists():
        _build_into(spec, SIZES[size], seed, cached)
    if directory is None:
        return cached
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for item in cached.iterdir():
        shutil.copyfile(item, out / item.name)  # copies, not links: a later save_pretrained must not write the cache
    return out


def _build_into(spec: Family, size: Size, seed: int, path: Path) -> None:
    tokenizer = train_tokenizer(spec, size.vocab, seed)
    token_id = {t: tokenizer.convert_tokens_to_ids(t) for t in (*spec.special, *spec.markup)}
    vocab_size = -(-len(tokenizer) // 64) * 64
    model = random_model(model_config(spec, size, vocab_size, token_id), seed)
    model.generation_config.eos_token_id = [token_id[t] for t in spec.stop]
    model.generation_config.pad_token_id = token_id[spec.pad] if spec.pad else None
    model.generation_config.bos_token_id = token_id[spec.bos] if spec.bos else None
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tokenizer.save_pretrained(str(tmp))
    model.save_pretrained(str(tmp))
    try:
        tmp.rename(path)  # atomic publish
    except OSError:  # another process published the same bytes first
        shutil.rmtree(tmp, ignore_errors=True)


def random_model(config: Any, seed: int) -> Any:
    """The architecture of ``config`` with weights drawn from ``seed`` (torch's global RNG left untouched)."""
    from transformers import AutoModelForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return AutoModelForCausalLM.from_config(config, dtype=torch.float32)


def train_tokenizer(spec: Family, vocab_size: int, seed: int) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` with ``spec``'s tokens and chat template.

    Byte-level BPE maps any text to ids and back exactly (``decode(encode(x)) == x``); the control tokens
    are added special tokens (matched before BPE, never split), the tool and reasoning tags added
    non-special tokens. Families whose tokenizer prepends a BOS on ``add_special_tokens=True`` (Llama 3,
    Gemma) do so here too; the trainer encodes chat renderings with ``add_special_tokens=False``.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    specials = [AddedToken(t, special=True, normalized=False) for t in spec.special]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(corpus(vocab_size, seed), trainer)
    core.add_tokens([AddedToken(t, special=False, normalized=False) for t in spec.markup])
    if spec.bos:
        core.post_processor = processors.TemplateProcessing(
            single=f"{spec.bos} $A", pair=f"{spec.bos} $A $B", special_tokens=[(spec.bos, core.token_to_id(spec.bos))])
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token=spec.eos, pad_token=spec.pad, bos_token=spec.bos,
                                   chat_template=chat_template(spec.name), clean_up_tokenization_spaces=False,
                                   model_max_length=4096)
