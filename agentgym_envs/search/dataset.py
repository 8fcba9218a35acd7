"""A search dataset (corpus + QA per split) and its retrievers, built once per process and shared.

Generated worlds are cached by ``(seed, size)``, user data by its paths, and retrievers by
``(dataset, kind)``: every env made in a process (a vector env's threads, ``check_env``'s many
instances) shares one corpus and one index. Cached objects are never mutated after they are built.

>>> data = load_dataset(world_seed=0, world_size="tiny")
>>> sorted(data.splits), data.qa("test", hops=2)[0].hops
(['test', 'train', 'validation'], 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from .corpus import Corpus, RenderedWorld, render_world
from .data import QA, load_corpus, load_qa
from .generate import generate_world
from .questions import MAX_HOPS, SPLITS, Question, generate_questions, split_of
from .retrieval import BM25Retriever, Retriever

RETRIEVERS = ("bm25", "dense", "dense-faiss")
#: Questions generated per hop level (before splitting 80/10/10), by world size.
QUESTIONS_PER_HOP = {"tiny": 150, "small": 1_000, "medium": 2_000, "large": 5_000}
USER_SPLIT = "all"


@dataclass(eq=False)  # hashed by identity: instances are cached and shared
class SearchData:
    """A corpus and its questions by split; ``rendered`` is the world behind a generated dataset."""

    name: str
    corpus: Corpus
    splits: dict[str, list[QA]]
    rendered: RenderedWorld | None = None
    _by_hops: dict[tuple[str, int | None], list[QA]] = field(default_factory=dict, repr=False)

    def qa(self, split: str, hops: int | None = None) -> list[QA]:
        """Questions of ``split`` (all splits' names are checked), optionally only those of ``hops`` hops."""
        if split not in self.splits:
            raise ValueError(f"split must be one of {', '.join(self.splits)} for {self.name}, got {split!r}")
        key = (split, hops)
        if key not in self._by_hops:
            self._by_hops[key] = [q for q in self.splits[split] if hops is None or q.hops == hops]
        return self._by_hops[key]


def load_dataset(*, world_seed: int = 0, world_size: str | int = "small", corpus_path: str | None = None,
                 qa_path: str | None = None) -> SearchData:
    """A generated world's dataset, or the user's corpus (and QA file) when ``corpus_path`` is given."""
    if qa_path is not None and corpus_path is None:
        raise ValueError("qa_path needs corpus_path too: the questions are answered from that corpus")
    if corpus_path is not None:
        return _user_dataset(str(corpus_path), None if qa_path is None else str(qa_path))
    return _generated_dataset(int(world_seed), world_size)


@lru_cache(maxsize=4)
def _generated_dataset(seed: int, size: str | int) -> SearchData:
    rendered = render_world(generate_world(seed, size))
    count = QUESTIONS_PER_HOP.get(size, 0) if isinstance(size, str) else min(5_000, size)
    splits: dict[str, list[QA]] = {s: [] for s in SPLITS}
    for hops in range(1, MAX_HOPS + 1):
        questions = generate_questions(rendered, hops, count)
        for i, question in enumerate(questions):
            splits[split_of(i, len(questions))].append(_as_qa(question, rendered.corpus))
    label = size if isinstance(size, str) else f"{size} entities"
    return SearchData(f"generated world (seed {seed}, {label})", rendered.corpus, splits, rendered)


def _as_qa(question: Question, corpus: Corpus) -> QA:
    plan = tuple((hop.query, corpus.ids[hop.passage]) for hop in question.plan)
    gold = frozenset(corpus.ids[p] for p in question.gold_passages)
    return QA(question.id, question.text, question.answers, gold, plan, question.hops, question.shape)


@lru_cache(maxsize=4)
def _user_dataset(corpus_path: str, qa_path: str | None) -> SearchData:
    corpus = load_corpus(corpus_path)
    questions = load_qa(qa_path, corpus) if qa_path is not None else []
    return SearchData(f"user data ({corpus_path})", corpus, {USER_SPLIT: questions})


@lru_cache(maxsize=8)
def build_retriever(data: SearchData, kind: str = "bm25") -> Retriever:
    """The shared retriever of ``kind`` (``bm25``, ``dense`` or ``dense-faiss``) over ``data``'s corpus."""
    if kind == "bm25":
        return BM25Retriever(data.corpus)
    if kind in ("dense", "dense-faiss"):
        from .dense import DenseRetriever

        return DenseRetriever(data.corpus, use_faiss=kind == "dense-faiss")
    raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, got {kind!r}")

