"""Small helpers shared by the puzzle envs: difficulty presets and action normalisation.

Every puzzle takes a ``difficulty=`` make kwarg naming one of its presets (``"easy"``, ``"medium"``,
``"hard"``); the registered ``-Easy``/``-Hard`` ids only fix that kwarg. Presets live beside each game's
rules so that the rules module, its tests and its env agree on what a difficulty means.
"""

from __future__ import annotations

import re
from typing import Mapping, TypeVar

T = TypeVar("T")

DIFFICULTIES = ("easy", "medium", "hard")

_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = " \t\n.!?;:'\"`"


def resolve_difficulty(presets: Mapping[str, T], difficulty: str, game: str) -> T:
    """The preset named ``difficulty``; a clear ``ValueError`` (expected/got) for an unknown name."""
    key = str(difficulty).lower()
    if key not in presets:
        raise ValueError(f"{game} difficulty must be one of {sorted(presets)}, got {difficulty!r}")
    return presets[key]


def normalise(action: str) -> str:
    """Lower-case, collapse whitespace and drop surrounding punctuation, so ``"Guess CRANE."`` parses.

    >>> normalise("  Guess   CRANE. ")
    'guess crane'
    """
    return _SPACES.sub(" ", action.lower()).strip(_EDGE_PUNCTUATION).strip()


def clip(text: str, limit: int = 60) -> str:
    """A short, quoted echo of the agent's action for error messages (never the whole 16 KB)."""
    return repr(text[:limit] + ("…" if len(text) > limit else ""))
