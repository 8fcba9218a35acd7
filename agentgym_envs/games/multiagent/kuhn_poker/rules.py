"""Kuhn poker rules: three cards (J < Q < K), one card each, ante 1, one betting round. Pure.

player_0 acts first: ``check`` or ``bet`` (1 chip). After check, player_1 may ``check`` (showdown for the
antes) or ``bet``, and player_0 then ``call``s or ``fold``s. After a bet the other player ``call``s
(showdown for 2) or ``fold``s (loses the ante). Payoffs are chips won divided by 2, the most a hand can
lose, so they lie in ``[-1, 1]`` and sum to zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

CARDS = ("J", "Q", "K")
MAX_LOSS = 2.0


class KuhnPoker:
    """A hand in progress (implements :class:`~agentgym_envs.games.multiagent.game.GameState`)."""

    num_players = 2

    def __init__(self, rng: np.random.Generator) -> None:
        deal = rng.permutation(3)
        self.cards = (int(deal[0]), int(deal[1]))
        self.history: list[str] = []

    def current_player(self) -> int | None:
        return None if self._over() else len(self.history) % 2

    def _over(self) -> bool:
        h = self.history
        return bool(h) and (h[-1] in ("fold", "call") or h == ["check", "check"])

    def legal_actions(self) -> list[str]:
        if self._over():
            return []
        return ["call", "fold"] if self.history and self.history[-1] == "bet" else ["check", "bet"]

    def apply(self, action: str) -> None:
        assert action in self.legal_actions(), f"illegal {action!r} after {self.history}"
        self.history.append(action)

    def chips(self) -> tuple[int, int] | None:
        """Net chips of each player once the hand is over (zero-sum)."""
        if not self._over():
            return None
        if self.history[-1] == "fold":
            folder = (len(self.history) - 1) % 2
            return (-1, 1) if folder == 0 else (1, -1)
        stake = 2 if "bet" in self.history else 1
        return (stake, -stake) if self.cards[0] > self.cards[1] else (-stake, stake)

    def returns(self) -> tuple[float, float] | None:
        chips = self.chips()
        return None if chips is None else (chips[0] / MAX_LOSS, chips[1] / MAX_LOSS)

    def showdown(self) -> bool:
        return self._over() and self.history[-1] != "fold"

    def view(self, player: int) -> dict[str, Any]:
        view: dict[str, Any] = {"card": CARDS[self.cards[player]], "history": list(self.history), "player": player}
        if self.showdown():
            view["opponent_card"] = CARDS[self.cards[1 - player]]
        chips = self.chips()
        if chips is not None:
            view["chips"] = chips[player]
        return view
