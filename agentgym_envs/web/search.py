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

import threading
from functools import lru_cache
from pathlib import Path
import numpy as np

from ..text_index import BM25Index, top_k
from .cache import cached
from .catalogue import Catalogue

SEARCH_RETURN_N = 50


class ProductSearch:
    """BM25 over a catalogue; :meth:`search` returns product indices, best first."""

    def __init__(self, catalogue: Catalogue, index: BM25Index):
        """Use :meth:`build` or :func:`load_search`; this wraps an already built index."""
        self.catalogue, self.index = catalogue, index
        self.search = lru_cache(maxsize=4_096)(self._search)  # type: ignore[method-assign]

    @classmethod
    def build(cls, catalogue: Catalogue, *, k1: float = 1.2, b: float = 0.75) -> ProductSearch:
        """Index ``catalogue`` (Lucene's defaults k1=1.2, b=0.75, as pyserini's)."""
        texts = (catalogue.search_text(p) for p in catalogue.products)
        return cls(catalogue, BM25Index.build(texts, k1=k1, b=b))

    def save(self, path: Path) -> None:
        self.index.save(path)

    @classmethod
    def load(cls, catalogue: Catalogue, path: Path) -> ProductSearch:
        return cls(catalogue, BM25Index.load(path))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every product for ``query`` (all zeros when no query word is indexed)."""
        return self.index.scores(query)

    def _search(self, query: str, k: int = SEARCH_RETURN_N) -> tuple[int, ...]:
        scores = self.scores(query)
        return tuple(top_k(scores, k, positive_only=True).tolist())


_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _cached(catalogue: Catalogue) -> ProductSearch:
    return cached(f"search-v2-{catalogue.key}", lambda: ProductSearch.build(catalogue), ProductSearch.save,
                  lambda path: ProductSearch.load(catalogue, path))


def load_search(catalogue: Catalogue) -> ProductSearch:
    """The shared search index of ``catalogue`` (built once per process)."""
    with _LOCK:
        return _cached(catalogue)
