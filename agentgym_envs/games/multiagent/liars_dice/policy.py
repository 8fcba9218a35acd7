"""Liar's Dice scripted policy: act on the probability that a bid holds given one's own dice.

The opponent's dice are unknown, each showing a face with probability 1/6, so a bid ``(q, f)`` holds with
probability ``P(Binomial(n_opp, 1/6) ≥ q − own count of f)``. Call ``liar`` when the call is more likely to
win (the last bid is false) than the best raise is to hold; otherwise raise to the most probable bid among the
cheapest few (lowest quantity first), ties broken by the generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .rules import higher_bids, prob_at_least

def bid_probability(view: dict[str, Any], quantity: int, face: int) -> float:
    own = view["dice"].count(face)
    return prob_at_least(quantity - own, view["opponent_dice_count"])


def scripted(view: dict[str, Any], legal: list[str], rng: np.random.Generator) -> str:
    total = len(view["dice"]) + view["opponent_dice_count"]
    last = (view["bids"][-1][1], view["bids"][-1][2]) if view["bids"] else None
    raises = higher_bids(last, total)
    p_last = bid_probability(view, *last) if last is not None else 1.0
    if not raises:
        return "liar"
    cheapest = min(q for q, _ in raises)
    scored = [(bid_probability(view, q, f), q, f) for q, f in raises if q <= cheapest + 1]
    best = max(p for p, _, _ in scored)
    if last is not None and 1.0 - p_last > best:
        return "liar"
    top = sorted((q, f) for p, q, f in scored if p >= best - 1e-12)
    q, f = top[int(rng.integers(len(top)))]
    return f"bid {q} {f}"
