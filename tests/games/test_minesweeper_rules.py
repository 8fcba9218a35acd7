"""Minesweeper rules: safe first reveal, no-guess generation, and a sound deduction solver."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.games.minesweeper import rules


@pytest.mark.parametrize("difficulty", sorted(rules.PRESETS))
@given(seed=st.integers(0, 2**32 - 1), where=st.floats(0, 1, exclude_max=True))
@settings(max_examples=15)
def test_generated_boards_keep_the_first_reveal_clear_and_need_no_guess(difficulty, seed, where):
    preset = rules.PRESETS[difficulty]
    first = int(where * preset.rows * preset.cols)
    mines = rules.generate(preset, first, np.random.default_rng(seed))
    assert len(mines) == preset.mines
    assert not mines & {first, *rules.neighbours(preset.rows, preset.cols)[first]}
    assert rules.solves(mines, first, preset)


@given(seed=st.integers(0, 2**32 - 1), opened=st.integers(1, 30))
@settings(max_examples=80)
def test_deduction_is_sound(seed, opened):
    """Whatever is revealed, cells proven safe are safe and cells proven mines are mines."""
    rows, cols, count = 6, 6, 8
    rng = np.random.default_rng(seed)
    mines = frozenset(int(c) for c in rng.choice(rows * cols, size=count, replace=False))
    numbers = rules.counts(mines, rows, cols)
    safe_cells = [c for c in range(rows * cols) if c not in mines]
    revealed = {int(c) for c in rng.choice(safe_cells, size=min(opened, len(safe_cells)), replace=False)}
    covered = set(range(rows * cols)) - revealed
    safe, proven = rules.deduce({c: numbers[c] for c in revealed}, covered, count, rows, cols)
    assert not safe & mines and proven <= mines and safe <= covered


def test_flood_opens_zeros_and_stops_at_numbers():
    mines = frozenset({0})
    numbers = rules.counts(mines, 3, 3)
    assert numbers[:4] == (0, 1, 0, 1)
    assert rules.flood(8, numbers, mines, (), 3, 3) == set(range(1, 9))


def test_neighbours_of_a_corner_and_the_centre():
    nb = rules.neighbours(3, 3)
    assert sorted(nb[0]) == [1, 3, 4] and len(nb[4]) == 8
