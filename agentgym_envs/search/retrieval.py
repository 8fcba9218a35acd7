"""Retrievers: the :class:`Retriever` protocol and the default BM25 retriever (``bm25s``).

A retriever maps a query to the top-k :class:`Document` s of a corpus. The env depends only on the
protocol, so BM25, dense retrieval (:mod:`.dense`) and a remote ``/retrieve`` service (:mod:`.service`)
are interchangeable. Results are deterministic: ties in score are broken by passage position.

BM25 uses ``bm25s`` (Lucene's BM25 variant, sparse precomputed scores). Tokenisation is ours: lowercase
word runs of two or more characters minus English stopwords, mapped straight to ids. It is about as good
as ``bm25s.tokenize`` and avoids its per-call overhead, which matters at one query per env step: a query
costs one sparse column sum and one ``argpartition``.

>>> from .corpus import Corpus
>>> corpus = Corpus(["a", "b"], ["Keshal Guild", "Varlonia"], ["A guild of printers.", "A river port."])
>>> [d.title for d in BM25Retriever(corpus).search("printers guild", k=1)]
['Keshal Guild']
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .corpus import Corpus

_WORD = re.compile(r"\w\w+")


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


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first; ties go to the lower index (deterministic)."""
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    # A tie at the k-th score may leave equal-scored lower indices outside ``candidates``: widen to them.
    threshold = scores[candidates].min()
    candidates = np.flatnonzero(scores >= threshold) if np.count_nonzero(scores >= threshold) > k else candidates
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]


def documents(corpus: Corpus, indices: np.ndarray, scores: np.ndarray | Mapping[int, float]) -> list[Document]:
    """The passages at ``indices`` with ``scores[i]`` (an array over the corpus, or a dict by index)."""
    return [Document(corpus.ids[i], corpus.titles[i], corpus.texts[i], float(scores[i])) for i in indices.tolist()]


class BM25Retriever:
    """BM25 over a :class:`Corpus` (title and text indexed together, as wiki-18's ``contents``)."""

    def __init__(self, corpus: Corpus, *, k1: float = 1.5, b: float = 0.75):
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN
        from bm25s.tokenization import Tokenized

        self.corpus = corpus
        self._stopwords = frozenset(STOPWORDS_EN)
        vocab: dict[str, int] = {}
        ids = [self._token_ids(f"{t} {x}", vocab, grow=True) for t, x in zip(corpus.titles, corpus.texts)]
        self.vocab = vocab
        self.model = bm25s.BM25(k1=k1, b=b)
        self.model.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)

    def _token_ids(self, text: str, vocab: dict[str, int], grow: bool = False) -> list[int]:
        words = (w for w in _WORD.findall(text.lower()) if w not in self._stopwords)
        if grow:
            return [vocab.setdefault(w, len(vocab)) for w in words]
        return [vocab[w] for w in words if w in vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage for ``query`` (zeros when no query word is in the corpus)."""
        ids = self._token_ids(query, self.vocab)
        if not ids:
            return np.zeros(len(self.corpus), dtype=np.float32)
        return self.model.get_scores(ids)

    def search(self, query: str, k: int) -> list[Document]:
        scores = self.scores(query)
        return documents(self.corpus, top_k(scores, k), scores)

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Document]]:
        return [self.search(q, k) for q in queries]
