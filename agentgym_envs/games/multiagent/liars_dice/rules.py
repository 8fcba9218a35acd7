"""Liar's Dice rules (two players, one round, no wild ones) and the bid probability. Pure.

Each player rolls ``dice`` six-sided dice in secret. player_0 opens with a bid "at least ``q`` dice among
all of them show face ``f``"; players alternate, each either raising the bid (a higher quantity, or the same
quantity of a higher face) or calling ``liar`` on the last bid. The dice are then revealed: if the bid holds
the caller loses (-1), otherwise the bidder loses. Bids never decrease, so a game ends within
``6 · total dice + 1`` moves.
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np

FACES = 6


def bid_action(quantity: int, face: int) -> str:
    return f"bid {quantity} {face}"


def higher_bids(last: tuple[int, int] | None, total_dice: int) -> list[tuple[int, int]]:
    """Every bid strictly above ``last`` (all bids when ``last`` is None), in increasing order."""
    q0, f0 = last if last is not None else (0, FACES)
    bids = [(q0, f) for f in range(f0 + 1, FACES + 1)] if q0 > 0 else []
    return bids + [(q, f) for q in range(q0 + 1, total_dice + 1) for f in range(1, FACES + 1)]


def prob_at_least(needed: int, unknown_dice: int, p: float = 1.0 / FACES) -> float:
    """P(at least ``needed`` successes among ``unknown_dice`` Bernoulli(p) dice)."""
    if needed <= 0:
        return 1.0
    if needed > unknown_dice:
        return 0.0
    return sum(comb(unknown_dice, k) * p**k * (1 - p) ** (unknown_dice - k) for k in range(needed, unknown_dice + 1))


class LiarsDice:
    """A round in progress (implements :class:`~agentgym_envs.games.multiagent.game.GameState`).

    Actions: ``"bid <quantity> <face>"`` and ``"liar"`` (once a bid exists).
    """

    num_players = 2

    def __init__(self, rng: np.random.Generator, dice: int = 5) -> None:
        if not 1 <= dice <= 10:
            raise ValueError(f"dice per player must be between 1 and 10, got {dice}")
        self.dice = [sorted(int(d) for d in rng.integers(1, FACES + 1, size=dice)) for _ in range(2)]
        self.bids: list[tuple[int, int, int]] = []  # (player, quantity, face)
        self.called_by: int | None = None

    @property
    def total_dice(self) -> int:
        return sum(len(d) for d in self.dice)

    def last_bid(self) -> tuple[int, int] | None:
        return (self.bids[-1][1], self.bids[-1][2]) if self.bids else None

    def current_player(self) -> int | None:
        return None if self.called_by is not None else len(self.bids) % 2

    def legal_actions(self) -> list[str]:
        if self.called_by is not None:
            return []
        raises = [bid_action(q, f) for q, f in higher_bids(self.last_bid(), self.total_dice)]
        return raises + (["liar"] if self.bids else [])

    def apply(self, action: str) -> None:
        assert action in self.legal_actions(), f"illegal {action!r} after {self.bids}"
        player = self.current_player()
        if action == "liar":
            self.called_by = player
        else:
            _, q, f = action.split()
            self.bids.append((player, int(q), int(f)))

    def count(self, face: int) -> int:
        return sum(d.count(face) for d in self.dice)

    def loser(self) -> int | None:
        if self.called_by is None:
            return None
        _, q, f = self.bids[-1]
        bid_holds = self.count(f) >= q
        return self.called_by if bid_holds else 1 - self.called_by

    def returns(self) -> tuple[float, float] | None:
        loser = self.loser()
        return None if loser is None else (-1.0, 1.0) if loser == 0 else (1.0, -1.0)

    def view(self, player: int) -> dict[str, Any]:
        view: dict[str, Any] = {
            "dice": list(self.dice[player]), "opponent_dice_count": len(self.dice[1 - player]),
            "bids": [list(b) for b in self.bids], "player": player,
        }
        if self.called_by is not None:
            view["called_by"] = self.called_by
            view["opponent_dice"] = list(self.dice[1 - player])
        return view
