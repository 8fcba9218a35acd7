"""The search env's configuration: one small dataclass, validated with the reason and the remedy."""

from __future__ import annotations

from dataclasses import dataclass

from .dataset import RETRIEVERS
from .generate import SIZES
from .questions import MAX_HOPS

REWARDS = ("em", "f1", "em_format")


@dataclass(frozen=True)
class SearchConfig:
    """Everything ``SearchEnv(**kwargs)`` / ``gymnasium.make("agentgym/Search-v0", **kwargs)`` accepts."""

    split: str | None = None
    """``train``, ``validation`` or ``test`` for generated worlds (default ``train``); ``all`` for user data."""
    hops: int | None = None
    """Only questions of this many hops (1–4); ``None`` mixes all levels."""
    world_seed: int = 0
    """Seed of the generated world (a different seed is a different world, corpus and question set)."""
    world_size: str | int = "small"
    """``tiny``, ``small`` (default, ~3,000 passages), ``medium``, ``large`` (>100,000 passages) or an entity count."""
    topk: int = 3
    """Passages returned per search (Search-R1 uses 3)."""
    retriever: str = "bm25"
    """``bm25`` (default), ``dense`` (MiniLM, exact cosine) or ``dense-faiss`` (MiniLM, FAISS flat index)."""
    retriever_url: str | None = None
    """A ``/retrieve`` service to use instead of a local index (see :mod:`.service`)."""
    reward: str = "em"
    """``em`` (exact match), ``f1`` (token F1) or ``em_format`` (exact match with Search-R1-style format terms)."""
    format_weight: float = 0.2
    """For ``em_format``: what a wrong but well-formed episode earns, and what a right but ill-formed one loses."""
    max_turns: int = 12
    """Replies that reach the env (valid or not) before the episode is truncated."""
    corpus_path: str | None = None
    """A jsonl corpus of your own (see :mod:`.data`); replaces the generated world."""
    qa_path: str | None = None
    """A jsonl QA file of your own, answered from ``corpus_path``."""

    def __post_init__(self) -> None:
        if self.hops is not None and not (isinstance(self.hops, int) and 1 <= self.hops <= MAX_HOPS):
            raise ValueError(f"hops must be an int in 1..{MAX_HOPS} or None for all levels, got {self.hops!r}")
        if self.corpus_path is not None and self.hops is not None:
            raise ValueError("hops= selects generated questions; user QA files have no hop labels, so leave it None")
        if isinstance(self.world_size, str) and self.world_size not in SIZES:
            raise ValueError(f"world_size must be one of {', '.join(SIZES)} or an entity count, "
                             f"got {self.world_size!r}")
        if not (isinstance(self.topk, int) and 1 <= self.topk <= 50):
            raise ValueError(f"topk must be an int in 1..50, got {self.topk!r}")
        if self.retriever not in RETRIEVERS:
            raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, got {self.retriever!r}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        if not 0.0 <= self.format_weight <= 0.5:
            raise ValueError(f"format_weight must be in [0, 0.5] so that a right answer always beats a wrong one, "
                             f"got {self.format_weight}")
        if not (isinstance(self.max_turns, int) and self.max_turns >= 1):
            raise ValueError(f"max_turns must be a positive int, got {self.max_turns!r}")
        if self.qa_path is not None and self.corpus_path is None:
            raise ValueError("qa_path needs corpus_path: questions are answered from that corpus")
        if self.corpus_path is not None and self.qa_path is None:
            raise ValueError("corpus_path needs qa_path for an env (the service alone can serve a bare corpus)")
