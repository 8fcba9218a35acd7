"""Tic-tac-toe rules and the perfect-play policy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.games.multiagent.tictactoe.policy import scripted
from agentgym_envs.games.multiagent.tictactoe.rules import LINES, TicTacToe, negamax, winner


def play(game: TicTacToe, policies, rng) -> tuple[float, float]:
    while game.current_player() is not None:
        p = game.current_player()
        game.apply(policies[p](game.view(p), game.legal_actions(), rng))
    return game.returns()


def random_policy(view, legal, rng):
    return legal[int(rng.integers(len(legal)))]


def test_empty_board_is_a_draw_with_perfect_play():
    assert negamax("." * 9) == 0


@pytest.mark.parametrize("line", LINES)
def test_every_line_wins(line):
    board = "".join("O" if i in line else "." for i in range(9))
    assert winner(board) == "O"


@given(st.permutations(range(9)), st.integers(0, 9))
def test_returns_follow_the_first_line_made(order, stop):
    game = TicTacToe()
    for cell in order[:stop]:
        if game.current_player() is None:
            break
        game.apply(str(cell + 1))
    w = winner(game.board)
    if w is not None:
        assert game.returns() == ((1.0, -1.0) if w == "X" else (-1.0, 1.0))
        assert game.legal_actions() == [] and game.current_player() is None
    elif "." not in game.board:
        assert game.returns() == (0.0, 0.0)
    else:
        assert game.returns() is None and len(game.legal_actions()) == game.board.count(".")


@pytest.mark.parametrize("scripted_seat", [0, 1])
def test_perfect_play_never_loses_to_random(scripted_seat):
    rng = np.random.default_rng(scripted_seat)
    results = []
    for _ in range(300):
        policies = [random_policy, random_policy]
        policies[scripted_seat] = scripted
        results.append(play(TicTacToe(), policies, rng)[scripted_seat])
    assert min(results) >= 0.0
    assert np.mean(results) > (0.9 if scripted_seat == 0 else 0.6)


def test_perfect_play_against_itself_always_draws():
    rng = np.random.default_rng(0)
    assert all(play(TicTacToe(), [scripted, scripted], rng) == (0.0, 0.0) for _ in range(30))


def test_takes_the_win_and_blocks():
    rng = np.random.default_rng(0)
    game = TicTacToe()
    for move in "1425":  # X: 1, 2; O: 4, 5. X to move wins at 3 (rather than blocking 6)
        game.apply(move)
    assert scripted(game.view(0), game.legal_actions(), rng) == "3"
    game = TicTacToe()
    for move in "149":  # X: 1, 9; O: 4. X threatens the diagonal at 5, so O must block there
        game.apply(move)
    assert scripted(game.view(1), game.legal_actions(), rng) == "5"
