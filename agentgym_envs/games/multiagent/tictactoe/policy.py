"""Tic-tac-toe scripted policy: perfect play (negamax), random among equally good moves."""

from __future__ import annotations

from typing import Any

import numpy as np

from .rules import move_values


def scripted(view: dict[str, Any], legal: list[str], rng: np.random.Generator) -> str:
    """The fastest win, else a draw, else the slowest loss; ties broken by ``rng``."""
    values = move_values(view["board"])
    best = max(values.values())
    choices = sorted(str(i + 1) for i, v in values.items() if v == best)
    return choices[int(rng.integers(len(choices)))]
