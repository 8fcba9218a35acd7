"""Retrievers: the :class:`Retriever` protocol and the default BM25 retriever (``bm25s``).

A retriever maps a query to the top-k :class:`Document` s of a corpus. The env depends only on the
protocol, so BM25, dense retrieval (:mod:`.dense`) and a remote ``/retrieve`` service (:mod:`.service`)
are interchangeable. Results are deterministic: ties in score are broken by passage position.

BM25 is :class:`~agentgym_envs.text_index.BM25Index` (``bm25s``) over word runs of two or more characters.

>>> from .corpus import Corpus
>>> corpus = Corpus(["a", "b"], ["Keshal Guild", "Varlonia"], ["A guild of printers.", "A river port."])
>>> [d.title for d in BM25Retriever(corpus).search("printers guild", k=1)]
['Keshal Guild']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..text_index import BM25Index, top_k
from .corpus import Corpus

__all__ = ["BM25Retriever", "Document", "Retriever", "documents", "top_k"]


@dataclass(frozen=True)
class Document:
    """A retrieved passage: its corpus id, title, text and the retriever's score."""

    id: str
    title: str
    text: str
    score: float


class Retriever(Protocol):
    """Anything that returns the top-``k`` documents for a query (BM25, dense, a remote service)."""

    def search(self, query: str, k: int) -> list[Document]: ...

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Document]]: ...


def documents(corpus: Corpus, indices: np.ndarray, scores: np.ndarray | Mapping[int, float]) -> list[Document]:
    """The passages at ``indices`` with ``scores[i]`` (an array over the corpus, or a dict by index)."""
    return [Document(corpus.ids[i], corpus.titles[i], corpus.texts[i], float(scores[i])) for i in indices.tolist()]


class BM25Retriever:
    """BM25 over a :class:`Corpus` (title and text indexed together, as wiki-18's ``contents``)."""

    def __init__(self, corpus: Corpus, *, k1: float = 1.5, b: float = 0.75):
        self.corpus = corpus
        texts = (f"{t} {x}" for t, x in zip(corpus.titles, corpus.texts))
        self.index = BM25Index.build(texts, k1=k1, b=b, word=r"\w\w+")

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for ``query`` (zeros when no query word is in the corpus)."""
        return self.index.scores(query)

    def search(self, query: str, k: int) -> list[Document]:
        scores = self.scores(query)
        return documents(self.corpus, top_k(scores, k), scores)

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Document]]:
        return [self.search(q, k) for q in queries]
