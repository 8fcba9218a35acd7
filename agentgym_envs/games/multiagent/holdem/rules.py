"""Heads-up Limit Texas Hold'em rules (one hand). Pure: chance is a deck shuffled up front.

player_0 is the button: it posts the small blind (1) and acts first before the flop; player_1 posts the
big blind (2) and acts first after it. Bets are fixed: 2 chips before the flop and on the flop, 4 on the
turn and river, at most 4 bets per street (the big blind counts as the first one before the flop). A street
closes on a call (except the small blind completing, which gives the big blind its option) or on a check
behind. Fold, or the best five-card hand at showdown, decides the pot. Payoffs are net chips / 48, the most
a player can put in, so they lie in ``[-1, 1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cards import card_name, evaluate

SMALL_BLIND, BIG_BLIND = 1, 2
BET_SIZES = (2, 2, 4, 4)
MAX_BETS = 4
STREETS = ("preflop", "flop", "turn", "river")
BOARD_SIZE = (0, 3, 4, 5)
MAX_LOSS = float(MAX_BETS * sum(BET_SIZES))  # 48 chips


class LimitHoldem:
    """A hand in progress (implements :class:`~agentgym_envs.games.multiagent.game.GameState`).

    Actions: ``fold``, ``check``, ``call``, ``bet`` (first bet of a street), ``raise``.
    """

    num_players = 2

    def __init__(self, rng: np.random.Generator) -> None:
        deck = [int(c) for c in rng.permutation(52)]
        self.hole = (deck[0:2], deck[2:4])
        self.board = deck[4:9]  # revealed street by street
        self.street = 0
        self.contrib = [SMALL_BLIND, BIG_BLIND]
        self.bets = 1  # bets and raises on this street (the big blind counts)
        self.street_actions = 0
        self.to_act = 0
        self.history: list[list[str]] = [[] for _ in STREETS]
        self.folded: int | None = None
        self.finished = False

    def current_player(self) -> int | None:
        return None if self.finished else self.to_act

    def to_call(self) -> int:
        p = self.to_act
        return self.contrib[1 - p] - self.contrib[p]

    def legal_actions(self) -> list[str]:
        if self.finished:
            return []
        aggressive = ("raise" if self.bets else "bet") if self.bets < MAX_BETS else None
        passive = ["fold", "call"] if self.to_call() > 0 else ["check"]
        return passive + ([aggressive] if aggressive else [])

    def apply(self, action: str) -> None:
        assert action in self.legal_actions(), f"illegal {action!r} on {STREETS[self.street]}: {self.history}"
        p = self.to_act
        self.history[self.street].append(action)
        first_action = self.street_actions == 0
        self.street_actions += 1
        if action == "fold":
            self.folded, self.finished = p, True
            return
        if action in ("bet", "raise"):
            self.contrib[p] = self.contrib[1 - p] + BET_SIZES[self.street]
            self.bets += 1
            self.to_act = 1 - p
            return
        self.contrib[p] = self.contrib[1 - p]  # call or check
        closes = (not first_action) if action == "check" else not (self.street == 0 and first_action)
        if closes:
            self._next_street()
        else:
            self.to_act = 1 - p

    def _next_street(self) -> None:
        self.street += 1
        if self.street == len(STREETS):
            self.finished, self.street = True, len(STREETS) - 1
            return
        self.bets, self.street_actions, self.to_act = 0, 0, 1

    def visible_board(self) -> list[int]:
        return self.board[: BOARD_SIZE[self.street]] if self.folded is not None or not self.finished else self.board

    def chips(self) -> tuple[int, int] | None:
        """Net chips of each player once the hand is over (zero-sum)."""
        if not self.finished:
            return None
        if self.folded is not None:
            lost = self.contrib[self.folded]
            return (-lost, lost) if self.folded == 0 else (lost, -lost)
        values = [evaluate(self.hole[p] + self.board) for p in (0, 1)]
        if values[0] == values[1]:
            return (0, 0)
        stake = self.contrib[0]  # equal at showdown
        return (stake, -stake) if values[0] > values[1] else (-stake, stake)

    def returns(self) -> tuple[float, float] | None:
        chips = self.chips()
        return None if chips is None else (chips[0] / MAX_LOSS, chips[1] / MAX_LOSS)

    def view(self, player: int) -> dict[str, Any]:
        view: dict[str, Any] = {
            "hole": [card_name(c) for c in self.hole[player]],
            "board": [card_name(c) for c in self.visible_board()],
            "street": STREETS[self.street], "history": [list(h) for h in self.history],
            "contrib": [self.contrib[player], self.contrib[1 - player]],
            "to_call": self.to_call() if not self.finished and self.to_act == player else 0,
            "bets": self.bets, "player": player,
        }
        if self.finished:
            view["chips"] = self.chips()[player]
            if self.folded is None:
                view["opponent_hole"] = [card_name(c) for c in self.hole[1 - player]]
        return view
