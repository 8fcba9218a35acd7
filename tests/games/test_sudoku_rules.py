"""Sudoku rules: the solver counts correctly, generated puzzles have exactly one solution, conflicts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.games.sudoku import rules


def test_solver_counts_all_288_four_by_four_grids():
    # A classic fact: there are 288 valid 4×4 Sudoku grids.
    assert rules.count_solutions((0,) * 16, 4, limit=1000) == 288


@pytest.mark.parametrize("key", sorted(rules.PRESETS))
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=8)
def test_generated_puzzles_have_a_unique_solution(key, seed):
    preset = rules.PRESETS[key]
    n = preset.n
    puzzle, solution = rules.generate(preset, np.random.default_rng(seed))
    assert rules.is_solved(solution, n)
    assert rules.count_solutions(puzzle, n, limit=2) == 1
    assert rules.solve(puzzle, n) == solution
    assert all(p in (0, s) for p, s in zip(puzzle, solution)), "givens come from the solution"
    assert sum(1 for p in puzzle if p) >= preset.givens


def test_generator_is_deterministic_per_seed():
    preset = rules.PRESETS[(9, "medium")]
    assert rules.generate(preset, np.random.default_rng(5)) == rules.generate(preset, np.random.default_rng(5))
    assert rules.generate(preset, np.random.default_rng(5)) != rules.generate(preset, np.random.default_rng(6))


@given(seed=st.integers(0, 10_000), cell=st.integers(0, 80), digit=st.integers(1, 9))
@settings(max_examples=60)
def test_conflict_agrees_with_candidates_and_solution_digits_never_conflict(seed, cell, digit):
    puzzle, solution = rules.generate(rules.PRESETS[(9, "easy")], np.random.default_rng(seed))
    if puzzle[cell]:
        return
    allowed = rules.candidates(puzzle, 9)[cell]
    assert (rules.conflict(puzzle, 9, cell, digit) is None) == (digit in allowed)
    assert solution[cell] in allowed


def test_clashing_givens_have_no_solution():
    grid = (1, 1) + (0,) * 14
    assert rules.count_solutions(grid, 4) == 0 and rules.solve(grid, 4) is None


def test_render_shows_rows_columns_and_blanks():
    text = rules.render((1, 0, 0, 0) * 4, 4)
    assert text.splitlines()[0].split() == ["1", "2", "3", "4"] and "r1   1 . | . ." in text
