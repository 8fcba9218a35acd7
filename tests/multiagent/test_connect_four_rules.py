"""Connect Four rules (win detection against a brute-force scan) and the scripted policy."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.games.multiagent.connect_four.policy import scripted
from agentgym_envs.games.multiagent.connect_four.rules import COLS, ROWS, Board, ConnectFour


def brute_force_winner(rows_top_first: list[str]) -> set[str]:
    """Every mark with four in a line anywhere (scanning the whole grid, independently of the rules)."""
    grid = list(reversed(rows_top_first))
    found = set()
    for r in range(ROWS):
        for c in range(COLS):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + k * dr, c + k * dc) for k in range(4)]
                if all(0 <= rr < ROWS and 0 <= cc < COLS for rr, cc in cells):
                    marks = {grid[rr][cc] for rr, cc in cells}
                    if len(marks) == 1 and marks != {"."}:
                        found |= marks
    return found


@given(st.lists(st.integers(0, COLS - 1), max_size=60))
def test_incremental_win_detection_matches_a_full_scan(columns):
    game = ConnectFour()
    for col in columns:
        if game.current_player() is None:
            break
        if str(col + 1) not in game.legal_actions():
            continue
        game.apply(str(col + 1))
        found = brute_force_winner(game.board.rows_text())
        if game.board.winner is None:
            assert not found
        else:
            assert found == {"XO"[game.board.winner]}
    if game.returns() is not None and game.board.winner is None:
        assert game.board.is_full() and game.returns() == (0.0, 0.0)


def test_lines_in_every_direction():
    for moves, winner in (([0, 0, 1, 1, 2, 2, 3], 0), ([0, 1, 0, 1, 0, 1, 0], 0),
                          ([0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3], 0), ([6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3], 0),
                          ([6, 0, 1, 0, 1, 0, 1, 0], 1)):
        board = Board.from_moves(moves)
        assert board.winner == winner, moves


def test_full_columns_are_not_playable_and_undo_restores():
    board = Board.from_moves([3] * ROWS)
    assert 3 not in board.playable()
    before = list(board.cells)
    board.drop(2)
    board.undo()
    assert board.cells == before and board.winner is None


def play(policies, rng) -> tuple[float, float]:
    game = ConnectFour()
    while game.current_player() is not None:
        p = game.current_player()
        game.apply(policies[p](game.view(p), game.legal_actions(), rng))
    return game.returns()


def random_policy(view, legal, rng):
    return legal[int(rng.integers(len(legal)))]


def test_scripted_beats_random_from_both_seats():
    rng = np.random.default_rng(0)
    as_first = [play([scripted, random_policy], rng)[0] for _ in range(40)]
    as_second = [play([random_policy, scripted], rng)[1] for _ in range(40)]
    assert np.mean(as_first) >= 0.95 and np.mean(as_second) >= 0.9


def test_scripted_wins_now_and_blocks():
    rng = np.random.default_rng(0)
    game = ConnectFour()
    for move in "121213":  # X on 1,1,1 (column 1 three high), O on 2,2,3 -> X wins at 1
        game.apply(move)
    assert scripted(game.view(0), game.legal_actions(), rng) == "1"
    game = ConnectFour()
    for move in "12121":  # X has three in column 1; O must block at 1
        game.apply(move)
    assert scripted(game.view(1), game.legal_actions(), rng) == "1"
