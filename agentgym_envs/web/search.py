"""BM25 product search with ``bm25s`` (no Java): WebShop's Lucene search, offline and in-process.

WebShop indexes each product's title, description, first bullet point and option text, and returns the
top 50 hits. :class:`ProductSearch` does the same with ``bm25s`` (Lucene's BM25 variant, precomputed
sparse scores): a query costs one sparse column sum and one ``argpartition``. Products that share no word
with the query are not results (Lucene returns no hit for them). Ties are broken by catalogue position so
results are deterministic, and repeated queries (paging through results) hit a small cache.

>>> from .catalogue import load_catalogue
>>> search = load_search(load_catalogue(1_000))
>>> hits = search.search("sulfate free shampoo")
>>> len(hits) <= SEARCH_RETURN_N and all(isinstance(i, int) for i in hits)
True
"""

from __future__ import annotations

import json
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .cache import cached
from .catalogue import Catalogue

SEARCH_RETURN_N = 50
_WORD = re.compile(r"\w+")


class ProductSearch:
    """BM25 over a catalogue; :meth:`search` returns product indices, best first."""

    def __init__(self, catalogue: Catalogue, model: Any, vocab: dict[str, int]):
        """Use :meth:`build` or :func:`load_search`; this wraps an already indexed ``bm25s`` model."""
        from bm25s.stopwords import STOPWORDS_EN

        self.catalogue, self.model, self.vocab = catalogue, model, vocab
        self._stopwords = frozenset(STOPWORDS_EN)
        self.search = lru_cache(maxsize=4_096)(self._search)  # type: ignore[method-assign]

    @classmethod
    def build(cls, catalogue: Catalogue, *, k1: float = 1.2, b: float = 0.75) -> ProductSearch:
        """Index ``catalogue`` (Lucene's defaults k1=1.2, b=0.75, as pyserini's)."""
        import bm25s
        from bm25s.tokenization import Tokenized

        search = cls(catalogue, bm25s.BM25(k1=k1, b=b), {})
        ids = [search._token_ids(catalogue.search_text(p), search.vocab, grow=True) for p in catalogue.products]
        search.model.index(Tokenized(ids=ids, vocab=search.vocab), show_progress=False)
        return search

    def save(self, path: Path) -> None:
        self.model.save(str(path / "bm25"))
        (path / "vocab.json").write_text(json.dumps(self.vocab))

    @classmethod
    def load(cls, catalogue: Catalogue, path: Path) -> ProductSearch:
        import bm25s

        vocab = json.loads((path / "vocab.json").read_text())
        return cls(catalogue, bm25s.BM25.load(str(path / "bm25")), vocab)

    def _token_ids(self, text: str, vocab: dict[str, int], grow: bool = False) -> list[int]:
        words = (w for w in _WORD.findall(text.lower()) if w not in self._stopwords)
        if grow:
            return [vocab.setdefault(w, len(vocab)) for w in words]
        return [vocab[w] for w in words if w in vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every product for ``query`` (all zeros when no query word is indexed)."""
        ids = self._token_ids(query, self.vocab)
        if not ids:
            return np.zeros(len(self.catalogue), dtype=np.float32)
        return self.model.get_scores(ids)

    def _search(self, query: str, k: int = SEARCH_RETURN_N) -> tuple[int, ...]:
        scores = self.scores(query)
        return tuple(top_k(scores, k).tolist())


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the up to ``k`` best positive scores, best first; ties go to the lower index."""
    positive = int(np.count_nonzero(scores > 0))
    k = min(k, positive)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = np.argpartition(-scores, k - 1)[:k]
    threshold = scores[candidates].min()
    tied = np.flatnonzero(scores >= threshold)
    if len(tied) > k:  # equal scores at the cut: take the lowest indices among them, deterministically
        candidates = tied
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]


_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _cached(catalogue: Catalogue) -> ProductSearch:
    return cached(f"search-{catalogue.key}", lambda: ProductSearch.build(catalogue), ProductSearch.save,
                  lambda path: ProductSearch.load(catalogue, path))


def load_search(catalogue: Catalogue) -> ProductSearch:
    """The shared search index of ``catalogue`` (built once per process)."""
    with _LOCK:
        return _cached(catalogue)
