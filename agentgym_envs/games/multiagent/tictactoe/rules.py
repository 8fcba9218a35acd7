"""Tic-tac-toe rules and a perfect (memoised negamax) solver. Pure: no text, no RNG.

The board is a 9-character string of ``"."``, ``"X"`` and ``"O"``, cells numbered 1–9 row by row; X
(player 0) moves first. Strings make positions hashable, so the solver memoises all 5,478 of them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

MARKS = ("X", "O")
EMPTY = "."
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def winner(board: str) -> str | None:
    """``"X"`` or ``"O"`` if that mark has three in a line, else ``None``."""
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return None


def to_move(board: str) -> str:
    """X moves when the counts are equal (X always starts)."""
    return "X" if board.count("X") == board.count("O") else "O"


@lru_cache(maxsize=None)
def negamax(board: str) -> int:
    """Value of ``board`` for the side to move: ``+(1 + empties)`` for a win (faster wins score more),
    ``0`` for a draw, negative for a loss."""
    if winner(board) is not None:  # the previous mover just won
        return -(1 + board.count(EMPTY))
    if EMPTY not in board:
        return 0
    mark = to_move(board)
    return max(-negamax(board[:i] + mark + board[i + 1:]) for i, c in enumerate(board) if c == EMPTY)


def move_values(board: str) -> dict[int, int]:
    """Negamax value (for the side to move) of each empty cell index 0–8."""
    mark = to_move(board)
    return {i: -negamax(board[:i] + mark + board[i + 1:]) for i, c in enumerate(board) if c == EMPTY}


class TicTacToe:
    """A game in progress (implements :class:`~agentgym_envs.games.multiagent.game.GameState`)."""

    num_players = 2

    def __init__(self) -> None:
        self.board = EMPTY * 9
        self.moves: list[int] = []  # cell numbers 1–9 in order

    def current_player(self) -> int | None:
        return None if self.is_over() else len(self.moves) % 2

    def is_over(self) -> bool:
        return winner(self.board) is not None or EMPTY not in self.board

    def legal_actions(self) -> list[str]:
        return [] if self.is_over() else [str(i + 1) for i, c in enumerate(self.board) if c == EMPTY]

    def apply(self, action: str) -> None:
        cell = int(action) - 1
        assert self.board[cell] == EMPTY and not self.is_over(), f"illegal move {action} on {self.board}"
        self.board = self.board[:cell] + MARKS[len(self.moves) % 2] + self.board[cell + 1:]
        self.moves.append(cell + 1)

    def returns(self) -> tuple[float, float] | None:
        if not self.is_over():
            return None
        w = winner(self.board)
        return (0.0, 0.0) if w is None else (1.0, -1.0) if w == "X" else (-1.0, 1.0)

    def view(self, player: int) -> dict[str, Any]:
        """The board and the last move (what the observation shows): transpositions share a view, and so a
        ``state_key``."""
        return {"board": self.board, "last_move": self.moves[-1] if self.moves else None, "mark": MARKS[player], "player": player}
