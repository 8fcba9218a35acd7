"""BM25 over a list of texts with ``bm25s`` (Lucene's BM25 variant, precomputed sparse scores), shared by the
search and web families, plus a deterministic top-k.

Tokenisation is ours: lowercase word runs minus English stopwords, mapped straight to ids. It is about as
good as ``bm25s.tokenize`` and avoids its per-call overhead, which matters at one query per env step: a
query costs one sparse column sum and one ``argpartition``.

>>> index = BM25Index.build(["A guild of printers.", "A river port."])
>>> top_k(index.scores("printers guild"), 1).tolist()
[0]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np


class BM25Index:
    """BM25 scores of every indexed text for a query; texts are identified by their position."""

    def __init__(self, model: Any, vocab: dict[str, int], size: int, *, word: str = r"\w+"):
        """Use :meth:`build` or :meth:`load`; this wraps an already indexed ``bm25s`` model."""
        from bm25s.stopwords import STOPWORDS_EN

        self.model, self.vocab, self.size = model, vocab, size
        self._word = re.compile(word)
        self._stopwords = frozenset(STOPWORDS_EN)

    @classmethod
    def build(cls, texts: Iterable[str], *, k1: float = 1.5, b: float = 0.75, word: str = r"\w+") -> BM25Index:
        """Index ``texts``; ``word`` is the regex of a token (e.g. ``\\w\\w+`` to drop one-letter words)."""
        import bm25s
        from bm25s.tokenization import Tokenized

        index = cls(bm25s.BM25(k1=k1, b=b), {}, 0, word=word)
        ids = [index._token_ids(text, grow=True) for text in texts]
        index.size = len(ids)
        index.model.index(Tokenized(ids=ids, vocab=index.vocab), show_progress=False)
        return index

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for ``query`` (all zeros when no query word is indexed)."""
        ids = self._token_ids(query)
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        return self.model.get_scores(ids)

    def save(self, path: Path) -> None:
        self.model.save(str(path / "bm25"))
        meta = {"vocab": self.vocab, "size": self.size, "word": self._word.pattern}
        (path / "vocab.json").write_text(json.dumps(meta))

    @classmethod
    def load(cls, path: Path) -> BM25Index:
        import bm25s

        meta = json.loads((path / "vocab.json").read_text())
        return cls(bm25s.BM25.load(str(path / "bm25")), meta["vocab"], meta["size"], word=meta["word"])

    def _token_ids(self, text: str, grow: bool = False) -> list[int]:
        words = (w for w in self._word.findall(text.lower()) if w not in self._stopwords)
        if grow:
            return [self.vocab.setdefault(w, len(self.vocab)) for w in words]
        return [self.vocab[w] for w in words if w in self.vocab]


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first; ties go to the lower index (deterministic).

    With ``positive_only`` texts scoring 0 (sharing no word with the query) are never returned, as Lucene
    returns no hit for them.
    """
    k = min(k, int(np.count_nonzero(scores > 0)) if positive_only else scores.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    candidates = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    threshold = scores[candidates].min()
    tied = np.flatnonzero(scores >= threshold)
    if len(tied) > k:  # equal scores at the cut: take the lowest indices among them
        candidates = tied
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]
