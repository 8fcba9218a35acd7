"""Limit Hold'em scripted policy: play by Monte Carlo hand strength against a random hand.

Hand strength is the chance of beating one uniformly random opponent hand once the board is complete,
estimated from ``SAMPLES`` deals drawn from the generator. Strong hands bet or raise; otherwise call when the
hand's equity beats the pot odds, else check or fold. Simple, but far ahead of random play.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cards import evaluate, parse_card

SAMPLES = 40
RAISE_AT = 0.6


def hand_strength(hole: list[int], board: list[int], rng: np.random.Generator, samples: int = SAMPLES) -> float:
    """Estimated probability that ``hole`` beats a random hand on a random completion of ``board`` (ties 1/2)."""
    known = set(hole) | set(board)
    deck = np.array([c for c in range(52) if c not in known])
    missing = 5 - len(board)
    score = 0.0
    for _ in range(samples):
        draw = [int(c) for c in rng.choice(deck, size=2 + missing, replace=False)]
        full_board = board + draw[2:]
        mine, theirs = evaluate(hole + full_board), evaluate(draw[:2] + full_board)
        score += 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0
    return score / samples


def scripted(view: dict[str, Any], legal: list[str], rng: np.random.Generator) -> str:
    strength = hand_strength([parse_card(c) for c in view["hole"]], [parse_card(c) for c in view["board"]], rng)
    aggressive = next((a for a in ("raise", "bet") if a in legal), None)
    if aggressive and strength >= RAISE_AT:
        return aggressive
    to_call = view["to_call"]
    if to_call == 0:
        return "check"
    pot_odds = to_call / (sum(view["contrib"]) + to_call)
    return "call" if strength >= pot_odds else "fold"
