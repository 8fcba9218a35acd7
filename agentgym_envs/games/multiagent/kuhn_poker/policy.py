"""Kuhn poker scripted policy: a Nash equilibrium (Kuhn 1950) with player_0's bluffing rate alpha = 1/6.

player_0: bet a J with probability alpha and a K with 3·alpha, check a Q; facing a bet after checking, fold
a J, call a Q with alpha + 1/3, call a K. player_1: facing a bet, call a K, call a Q with 1/3, fold a J;
after a check, bet a K, bet a J with 1/3 (bluff), check a Q.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ALPHA = 1.0 / 6.0

#: (player, history so far, card) -> probability of the aggressive action (bet or call).
_AGGRESSION: dict[tuple[int, tuple[str, ...], str], float] = {
    (0, (), "J"): ALPHA, (0, (), "Q"): 0.0, (0, (), "K"): 3 * ALPHA,
    (0, ("check", "bet"), "J"): 0.0, (0, ("check", "bet"), "Q"): ALPHA + 1 / 3, (0, ("check", "bet"), "K"): 1.0,
    (1, ("bet",), "J"): 0.0, (1, ("bet",), "Q"): 1 / 3, (1, ("bet",), "K"): 1.0,
    (1, ("check",), "J"): 1 / 3, (1, ("check",), "Q"): 0.0, (1, ("check",), "K"): 1.0,
}


def strategy(view: dict[str, Any]) -> dict[str, float]:
    """The equilibrium's probability of each move at the viewer's information set (card and history)."""
    p = _AGGRESSION.get((view["player"], tuple(view["history"]), view["card"]), 0.5)
    aggressive, passive = ("call", "fold") if view["history"][-1:] == ["bet"] else ("bet", "check")
    return {aggressive: p, passive: 1.0 - p}


def scripted(view: dict[str, Any], legal: list[str], rng: np.random.Generator) -> str:
    (aggressive, p), (passive, _) = strategy(view).items()
    return aggressive if rng.random() < p else passive
