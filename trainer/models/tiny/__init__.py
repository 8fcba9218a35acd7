"""The embedded default policy: a tokenizer and a few-layer LM built locally from the envs' own text.

>>> model, tokenizer = build_tiny(TinyConfig(corpus_episodes=8), cache_dir=None)
>>> model.config.vocab_size >= len(tokenizer)  # every token has a row in the embedding
True

Artifacts (tokenizer files and the initial weights, in Hugging Face format so any backend can load them)
go to ``cache_dir/<hash of the config>``; the same config and seed give the same bytes, so a cached build
is reused and a missing one is rebuilt identically.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .chat_template import CHAT_TEMPLATE, END, PAD, RESPONSE_TEMPLATE, render_chat
from .model import TinyModelConfig, build_tiny_model

__all__ = ["TinyConfig", "TinyModelConfig", "build_tiny", "default_cache_dir", "render_chat", "CHAT_TEMPLATE"]


@dataclass(frozen=True)
class TinyConfig:
    """Everything the tiny policy's artifacts are a function of."""

    model: TinyModelConfig = field(default_factory=TinyModelConfig)
    vocab_size: int = 1024
    """BPE target size (the household text saturates below ~900 merges; the model pads to a multiple of 64)."""
    corpus_episodes: int = 300
    """Expert and random household episodes rendered for tokenizer training."""
    seed: int = 0
    """Seeds the corpus tasks and the weight initialisation."""

    def __post_init__(self) -> None:
        if isinstance(self.model, dict):
            object.__setattr__(self, "model", TinyModelConfig(**self.model))
        if self.vocab_size < 300:
            raise ValueError(f"vocab_size must be >= 300 (256 bytes + special tokens + merges), got {self.vocab_size}")

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def default_cache_dir() -> Path:
    """``$AGENTGYM_CACHE/tiny``, else ``~/.cache/agentgym/tiny``."""
    root = os.environ.get("AGENTGYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "agentgym")
    return Path(root) / "tiny"


def build_tiny(config: TinyConfig = TinyConfig(), cache_dir: str | Path | None = None):
    """``(model, tokenizer)`` for ``config``, loaded from the cache or built and saved there first."""
    from transformers import AutoModelForCausalLM

    from .tokenizer import load_tokenizer

    path = Path(cache_dir or default_cache_dir()) / config.key()
    if not (path / "model.safetensors").exists():
        _build_into(config, path)
    tokenizer = load_tokenizer(path)
    tokenizer.chat_template = CHAT_TEMPLATE  # code, not a build artifact: a cache built before a change renders as now
    tokenizer.response_template = RESPONSE_TEMPLATE  # parses tool calls back (tokenizer.parse_response, TRL)
    return AutoModelForCausalLM.from_pretrained(str(path), attn_implementation="sdpa"), tokenizer


def _build_into(config: TinyConfig, path: Path) -> None:
    from .corpus import household_corpus
    from .tokenizer import train_tokenizer

    tokenizer = train_tokenizer(household_corpus(config.corpus_episodes, config.seed), config.vocab_size)
    vocab = -(-len(tokenizer) // 64) * 64
    model = build_tiny_model(config.model, vocab, seed=config.seed, pad_token_id=tokenizer.convert_tokens_to_ids(PAD),
                             eos_token_id=tokenizer.convert_tokens_to_ids(END))
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(tmp))
    model.save_pretrained(str(tmp))
    (tmp / "tiny_config.json").write_text(json.dumps(asdict(config), indent=2))
    try:
        tmp.rename(path)  # atomic: a concurrent builder of the same config produced the same bytes
    except OSError:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
