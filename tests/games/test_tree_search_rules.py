"""k-ary tree search rules: the depth-first explorer finds every goal within 2·edges moves, blind to it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agentgym_envs.games.tree_search import rules


def explore(goal, preset):
    """Play the explorer against a goal; the explorer sees only the failed leaves, never the goal."""
    node, failed, moves = (), [], 0
    while node != goal:
        action = rules.explorer_action(node, set(failed), preset)
        node = node[:-1] if action == rules.BACK else node + (int(action),)
        moves += 1
        if rules.is_leaf(node, preset) and node != goal:
            failed.append(node)
        assert moves <= 2 * preset.edges, "the explorer must not loop"
    return moves, failed


@pytest.mark.parametrize("difficulty, stride", [("easy", 1), ("medium", 1), ("hard", 7)])
def test_explorer_finds_every_sampled_goal_leaf_within_twice_the_edges(difficulty, stride):
    preset = rules.PRESETS[difficulty]
    leaves = list(itertools.product(range(1, preset.k + 1), repeat=preset.depth))
    for goal in leaves[::stride] + leaves[-1:]:  # the last leaf in DFS order is the worst case
        moves, failed = explore(goal, preset)
        assert moves <= 2 * preset.edges and goal not in failed


def test_explorer_never_revisits_a_failed_leaf():
    preset = rules.TreePreset(3, 3)
    _, failed = explore((3, 3, 3), preset)
    assert len(failed) == len(set(failed)) == preset.leaves - 1  # the last leaf in DFS order: all others, once each


def test_exhausted_counts_failed_leaves_below_a_node():
    preset = rules.TreePreset(2, 2)
    assert rules.exhausted((1,), {(1, 1), (1, 2)}, preset) and not rules.exhausted((), {(1, 1), (1, 2)}, preset)


def test_random_leaf_is_a_leaf_and_uses_the_generator():
    preset = rules.PRESETS["hard"]
    leaves = {rules.random_leaf(preset, np.random.default_rng(s)) for s in range(30)}
    assert all(len(leaf) == preset.depth and all(1 <= c <= preset.k for c in leaf) for leaf in leaves)
    assert len(leaves) > 20
    assert rules.name(()) == "root" and rules.name((2, 1)) == "2-1"
