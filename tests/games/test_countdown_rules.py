"""Countdown rules: the safe expression parser (TV rules), moves, the solver and solvable puzzles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.games.countdown import rules
from agentgym_envs.games.countdown.env import expression_for
from agentgym_envs.games.countdown.expression import ExpressionError, evaluate

NUMBERS = (1, 3, 4, 9, 25, 50)


@pytest.mark.parametrize("text, value", [
    ("(25 + 50) * 4 - 3", 297), ("25*4", 100), ("50 / 25 + 9", 11), ("9 x 4", 36), ("50 ÷ 25 × 3", 6),
    ("(50 - 25) * (9 - 4) = 125", 125), ("[25 + 3] * 4", 112), ("  9  ", 9),
])
def test_legal_expressions_evaluate(text, value):
    assert evaluate(text, NUMBERS)[0] == value


@pytest.mark.parametrize("text, reason", [
    ("25 * 25", "used 2 times"), ("9 + 9 + 1", "used 2 times"), ("7 * 4", "not one of the given numbers"),
    ("9 / 4", "not a whole number"), ("(9 + 1) / 4", "10 / 4 is not a whole number"), ("3 - 4 + 9", "not positive"),
    ("(4 - 3 - 1) + 9", "1 - 1 is not positive"), ("-3 + 9", "UnaryOp"), ("3 ** 4", "Pow"), ("9 // 4", "FloorDiv"),
    ("3.0 * 4", "literal 3.0"), ("__import__('os').system('id')", "Call"), ("(((", "could not parse"),
    ("1+" * 150 + "1", "at most 200"), ("", "empty"), ("9 % 4", "Mod"), ("True + 3", "literal True"),
])
def test_illegal_expressions_are_rejected_with_a_reason(text, reason):
    with pytest.raises(ExpressionError, match=reason.replace("(", r"\(").replace("*", r"\*").replace("+", r"\+")):
        evaluate(text, NUMBERS)


@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 5))
@settings(max_examples=100)
def test_random_legal_move_sequences_fold_into_expressions_with_the_same_value(seed, steps):
    rng = np.random.default_rng(seed)
    pool, moves = NUMBERS, []
    for _ in range(steps):
        options = list(rules.moves(pool))
        move, result = options[int(rng.integers(len(options)))]
        moves.append(move)
        pool = rules.play(pool, move)
        assert result > 0 and result in pool
    text = expression_for(NUMBERS, moves)
    value, recorded = evaluate(text, NUMBERS)
    # the expression is the tree of the last result: the moves it depends on, in order
    assert value == rules.apply(*moves[-1]) and recorded[-1] == moves[-1] and set(recorded) <= set(moves)


@pytest.mark.parametrize("difficulty", sorted(rules.PRESETS))
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=15)
def test_generated_targets_are_reachable_in_range_and_hard_enough(difficulty, seed):
    preset = rules.PRESETS[difficulty]
    numbers, target = rules.generate(preset, np.random.default_rng(seed))
    assert len(numbers) == preset.numbers and preset.target[0] <= target <= preset.target[1]
    plan = rules.solve(numbers, target)
    assert plan is not None and len(plan) >= preset.min_moves
    pool = numbers
    for move in plan:
        pool = rules.play(pool, move)
        assert pool is not None
    assert rules.apply(*plan[-1]) == target


def test_solver_reports_unreachable_targets():
    assert rules.solve((1, 2), 7) is None and rules.solve((2, 3), 6) == [(3, "*", 2)]


def test_moves_are_distinct_and_legal():
    listed = list(rules.moves((2, 2, 4)))
    assert len(listed) == len({m for m, _ in listed})
    assert ((2, "-", 2), 0) not in listed and ((4, "/", 2), 2) in listed and ((2, "/", 4), 0) not in listed
