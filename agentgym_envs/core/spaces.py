"""A text space that admits any Unicode string up to a length bound.

Gymnasium's :class:`~gymnasium.spaces.Text` only admits characters from a finite charset (alphanumerics by
default), which rejects ordinary model output such as ``"take apple 1 from countertop 2"``. ``UnicodeText``
keeps ``Text``'s interface (so wrappers and checkers that know ``Text`` keep working) but ``contains`` accepts
any ``str`` whose length is within bounds; ``sample`` draws from a printable, mixed-script alphabet.

>>> space = UnicodeText(max_length=32)
>>> space.contains("put mug 1 in/on coffeemachine 1 ☕")
True
>>> space.contains("x" * 33), space.contains(b"bytes")
(False, False)
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium.spaces import Text

#: Sampling alphabet: printable ASCII plus a few non-Latin letters, accents and symbols.
SAMPLE_CHARSET = frozenset(string.ascii_letters + string.digits + string.punctuation + " \n\t" + "éüßçñ中文日本語Ωπ☕→€")


class UnicodeText(Text):
    """Any Unicode string whose length lies in ``[min_length, max_length]``."""

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | np.random.Generator | None = None,
                 sample_charset: frozenset[str] | str = SAMPLE_CHARSET):
        """``sample_charset`` only shapes ``sample()``; ``contains`` admits every character regardless."""
        super().__init__(max_length, min_length=min_length, charset=sample_charset, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((UnicodeText, self.min_length, self.max_length))
