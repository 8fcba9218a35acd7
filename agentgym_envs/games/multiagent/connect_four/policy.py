"""Connect Four scripted policy: threat detection plus a one-ply window heuristic.

Order of concerns: win now; block the opponent's immediate win; never drop a disc that lets the opponent win
on top of it (a two-ply safety check); then the move whose resulting position scores best on the classic
window heuristic (open twos and threes, centre control). Ties are broken by the generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .rules import COLS, EMPTY, ROWS, WINDOWS, Board

_OWN = {2: 2.0, 3: 5.0, 4: 1000.0}
_THEIRS = {2: 2.0, 3: 4.5}


def evaluate(board: Board, player: int) -> float:
    """Heuristic value of ``board`` for ``player``: its open lines minus the opponent's, plus the centre."""
    score = 3.0 * sum(1 for r in range(ROWS) if board.cells[r * COLS + COLS // 2] == player)
    for window in WINDOWS:
        mine = theirs = 0
        for i in window:
            v = board.cells[i]
            if v == player:
                mine += 1
            elif v != EMPTY:
                theirs += 1
        if theirs == 0:
            score += _OWN.get(mine, 0.0)
        elif mine == 0:
            score -= _THEIRS.get(theirs, 0.0)
    return score


def _gives_away_win(board: Board, col: int, player: int) -> bool:
    """After ``player`` drops in ``col``, can the opponent win at once (e.g. on top of that disc)?"""
    board.drop(col)
    try:
        return board.winner is None and any(board.wins_with(c, 1 - player) for c in board.playable())
    finally:
        board.undo()


def _pick(cols: list[int], rng: np.random.Generator) -> str:
    cols = sorted(cols)
    return str(cols[int(rng.integers(len(cols)))] + 1)


def scripted(view: dict[str, Any], legal: list[str], rng: np.random.Generator) -> str:
    board = Board.from_rows(view["rows"])
    me = board.to_move
    cols = [int(a) - 1 for a in legal]
    for who in (me, 1 - me):  # win, else block
        hits = [c for c in cols if board.wins_with(c, who)]
        if hits:
            return _pick(hits, rng)
    candidates = [c for c in cols if not _gives_away_win(board, c, me)] or cols
    scores = {}
    for c in candidates:
        board.drop(c)
        scores[c] = evaluate(board, me)
        board.undo()
    best = max(scores.values())
    return _pick([c for c, s in scores.items() if s >= best - 1e-9], rng)
