"""Rock-Paper-Scissors scripted policy (a frequency counter) and a naive exploitable baseline.

Uniform random play is the game's equilibrium, so nothing beats it in expectation; the frequency counter
instead exploits biased opponents: it predicts the opponent's most frequent move so far and plays what
beats it. :func:`always_rock` is the simplest biased opponent (used to show the counter's edge in a league).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .rules import COUNTER, MOVES


def scripted(view: dict[str, Any], legal: list[str], rng: np.random.Generator) -> str:
    theirs = Counter(h[1] for h in view["history"])
    if not theirs:
        return MOVES[int(rng.integers(3))]
    top = max(theirs.values())
    predicted = [m for m in MOVES if theirs[m] == top]
    return COUNTER[predicted[int(rng.integers(len(predicted)))]]


def always_rock(view: dict[str, Any], legal: list[str], rng: np.random.Generator) -> str:
    return "rock"
