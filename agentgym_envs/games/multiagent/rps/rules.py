"""Rock-Paper-Scissors over several rounds. Pure.

Each round both players choose ``rock``, ``paper`` or ``scissors`` at once (the turn-based form lets player_0
commit first, hidden from player_1). Rock beats scissors, scissors beats paper, paper beats rock. After
``rounds`` rounds the player who won more rounds wins the match (+1, the other -1; equal counts draw, 0).
"""

from __future__ import annotations

from typing import Any

MOVES = ("rock", "paper", "scissors")
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
COUNTER = {loser: winner for winner, loser in BEATS.items()}  # the move that beats the key


def round_winner(a: str, b: str) -> int | None:
    """0 if ``a`` beats ``b``, 1 if ``b`` beats ``a``, ``None`` on a tie."""
    return None if a == b else 0 if BEATS[a] == b else 1


class RockPaperScissors:
    """A match in progress (implements :class:`~agentgym_envs.games.multiagent.game.GameState`)."""

    num_players = 2

    def __init__(self, rounds: int = 9) -> None:
        if not 1 <= rounds <= 1000:
            raise ValueError(f"rounds must be between 1 and 1000, got {rounds}")
        self.rounds = rounds
        self.history: list[tuple[str, str]] = []
        self.pending: str | None = None  # player_0's hidden choice in the turn-based form

    def current_player(self) -> int | None:
        return None if len(self.history) == self.rounds else (0 if self.pending is None else 1)

    def legal_actions(self) -> list[str]:
        return [] if len(self.history) == self.rounds else list(MOVES)

    def apply(self, action: str) -> None:
        assert action in MOVES and len(self.history) < self.rounds, f"illegal {action!r}"
        if self.pending is None:
            self.pending = action
        else:
            self.play_round(self.pending, action)

    def play_round(self, move_0: str, move_1: str) -> None:
        """Both choices at once (the simultaneous form)."""
        self.history.append((move_0, move_1))
        self.pending = None

    def wins(self) -> tuple[int, int]:
        outcomes = [round_winner(a, b) for a, b in self.history]
        return outcomes.count(0), outcomes.count(1)

    def returns(self) -> tuple[float, float] | None:
        if len(self.history) < self.rounds:
            return None
        w0, w1 = self.wins()
        return (0.0, 0.0) if w0 == w1 else (1.0, -1.0) if w0 > w1 else (-1.0, 1.0)

    def view(self, player: int) -> dict[str, Any]:
        wins = self.wins()
        view: dict[str, Any] = {
            "rounds": self.rounds, "history": [[m[player], m[1 - player]] for m in self.history],
            "score": [wins[player], wins[1 - player]], "player": player,
        }
        if player == 0 and self.pending is not None:
            view["committed"] = self.pending
        return view
