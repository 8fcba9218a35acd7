"""Connect Four rules (7 columns × 6 rows, gravity, four in a line wins). Pure: no text, no RNG.

Cells are indexed ``row * 7 + col`` with row 0 at the bottom; a cell holds -1 (empty), 0 (player_0, "X",
moves first) or 1 (player_1, "O"). Win detection looks only at lines through the last disc, which is
exact because a line can only appear where a disc was just dropped.
"""

from __future__ import annotations

from typing import Any

ROWS, COLS, CONNECT = 6, 7, 4
EMPTY = -1
MARKS = ("X", "O")
_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def _windows() -> tuple[tuple[int, ...], ...]:
    """Every line of four cells on the board (69 of them)."""
    out = []
    for r in range(ROWS):
        for c in range(COLS):
            for dr, dc in _DIRECTIONS:
                cells = [(r + k * dr, c + k * dc) for k in range(CONNECT)]
                if all(0 <= rr < ROWS and 0 <= cc < COLS for rr, cc in cells):
                    out.append(tuple(rr * COLS + cc for rr, cc in cells))
    return tuple(out)


WINDOWS = _windows()


class Board:
    """A Connect Four position; ``drop``/``undo`` make search cheap."""

    def __init__(self) -> None:
        self.cells = [EMPTY] * (ROWS * COLS)
        self.heights = [0] * COLS
        self.moves: list[int] = []  # columns 0–6 in play order
        self.winner: int | None = None

    @classmethod
    def from_moves(cls, columns: list[int]) -> "Board":
        board = cls()
        for col in columns:
            board.drop(col)
        return board

    @classmethod
    def from_rows(cls, rows_top_first: list[str]) -> "Board":
        """The position drawn by :meth:`rows_text` (the move order is not needed to play on)."""
        board = cls()
        for r, row in enumerate(reversed(rows_top_first)):
            for c, symbol in enumerate(row):
                if symbol != ".":
                    board.cells[r * COLS + c] = MARKS.index(symbol)
                    board.heights[c] = r + 1
                    board.moves.append(c)  # a placeholder order; only the count (whose turn) matters
        return board

    @property
    def to_move(self) -> int:
        return len(self.moves) % 2

    def playable(self) -> list[int]:
        return [] if self.winner is not None else [c for c in range(COLS) if self.heights[c] < ROWS]

    def is_full(self) -> bool:
        return len(self.moves) == ROWS * COLS

    def drop(self, col: int) -> None:
        """Drop the side to move's disc in ``col`` (which must be playable) and update ``winner``."""
        assert self.winner is None and 0 <= col < COLS and self.heights[col] < ROWS, f"illegal drop in column {col}"
        row, player = self.heights[col], self.to_move
        self.cells[row * COLS + col] = player
        self.heights[col] += 1
        self.moves.append(col)
        if self.line_through(row, col, player):
            self.winner = player

    def undo(self) -> None:
        col = self.moves.pop()
        self.heights[col] -= 1
        self.cells[self.heights[col] * COLS + col] = EMPTY
        self.winner = None

    def line_through(self, row: int, col: int, player: int) -> bool:
        """Whether ``player`` has four in a line through ``(row, col)`` (assuming a ``player`` disc there)."""
        for dr, dc in _DIRECTIONS:
            run = 1
            for sign in (1, -1):
                r, c = row + sign * dr, col + sign * dc
                while 0 <= r < ROWS and 0 <= c < COLS and self.cells[r * COLS + c] == player:
                    run, r, c = run + 1, r + sign * dr, c + sign * dc
            if run >= CONNECT:
                return True
        return False

    def wins_with(self, col: int, player: int) -> bool:
        """Whether dropping a ``player`` disc in ``col`` now would complete a line (whoever is to move)."""
        if self.heights[col] >= ROWS:
            return False
        row = self.heights[col]
        self.cells[row * COLS + col] = player
        won = self.line_through(row, col, player)
        self.cells[row * COLS + col] = EMPTY
        return won

    def rows_text(self) -> list[str]:
        """Rows from the top, ``"."`` for empty, ``X``/``O`` for discs."""
        symbol = {EMPTY: ".", 0: "X", 1: "O"}
        return ["".join(symbol[self.cells[r * COLS + c]] for c in range(COLS)) for r in reversed(range(ROWS))]


class ConnectFour:
    """A game in progress (implements :class:`~agentgym_envs.games.multiagent.game.GameState`).

    Actions are column numbers ``"1"``–``"7"``.
    """

    num_players = 2

    def __init__(self) -> None:
        self.board = Board()

    def current_player(self) -> int | None:
        return None if self._over() else self.board.to_move

    def _over(self) -> bool:
        return self.board.winner is not None or self.board.is_full()

    def legal_actions(self) -> list[str]:
        return [] if self._over() else [str(c + 1) for c in self.board.playable()]

    def apply(self, action: str) -> None:
        self.board.drop(int(action) - 1)

    def returns(self) -> tuple[float, float] | None:
        if not self._over():
            return None
        w = self.board.winner
        return (0.0, 0.0) if w is None else (1.0, -1.0) if w == 0 else (-1.0, 1.0)

    def view(self, player: int) -> dict[str, Any]:
        """The grid and the last column played (what the observation shows), not the whole move order."""
        last = self.board.moves[-1] + 1 if self.board.moves else None
        return {"rows": self.board.rows_text(), "last_move": last, "mark": MARKS[player], "player": player}
