"""Tower of Hanoi rules: big-on-small is never allowed; the solver is optimal from any position."""

from __future__ import annotations

import itertools
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.games.hanoi import rules

peg = st.integers(0, 2)


@given(disks=st.integers(1, 6), moves=st.lists(st.tuples(peg, peg), max_size=60))
def test_any_sequence_of_attempted_moves_keeps_every_peg_sorted(disks, moves):
    position = rules.start(disks, 0)
    for source, target in moves:
        problem = rules.move_problem(position, source, target)
        if problem is None:
            position = rules.move(position, source, target)
        else:
            with pytest.raises(ValueError):
                rules.move(position, source, target)
        assert all(list(stack) == sorted(stack, reverse=True) for stack in position)
        assert sorted(d for stack in position for d in stack) == list(range(1, disks + 1))


def test_big_on_small_is_refused_with_a_reason():
    position = ((3, 2), (1,), ())
    assert "cannot go on top of the smaller disk 1" in rules.move_problem(position, 0, 1)
    assert rules.move_problem(position, 2, 0) == "peg C is empty"
    assert rules.legal_moves(position) == [(0, 2), (1, 0), (1, 2)]


def _all_positions(disks):
    for assignment in itertools.product(range(3), repeat=disks):
        pegs = [[], [], []]
        for disk in range(disks, 0, -1):
            pegs[assignment[disk - 1]].append(disk)
        yield tuple(tuple(p) for p in pegs)


@pytest.mark.parametrize("disks", [1, 3, 4])
def test_best_move_and_distance_are_optimal_from_every_position(disks):
    for goal in range(3):
        solved = rules.start(disks, goal)
        dist, queue = {solved: 0}, deque([solved])
        while queue:  # moves are reversible, so BFS from the goal gives exact distances
            position = queue.popleft()
            for source, target in rules.legal_moves(position):
                nxt = rules.move(position, source, target)
                if nxt not in dist:
                    dist[nxt] = dist[position] + 1
                    queue.append(nxt)
        for position in _all_positions(disks):
            assert rules.distance(position, goal) == dist[position]
            best = rules.best_move(position, goal)
            assert (best is None) == (dist[position] == 0)
            if best is not None:
                assert dist[rules.move(position, *best)] == dist[position] - 1


@pytest.mark.parametrize("difficulty", sorted(rules.PRESETS))
def test_solver_takes_the_optimal_number_of_moves(difficulty):
    disks = rules.PRESETS[difficulty].disks
    position, moves = rules.start(disks, 0), 0
    while (best := rules.best_move(position, 2)) is not None:
        position, moves = rules.move(position, *best), moves + 1
    assert rules.is_solved(position, 2, disks) and moves == 2**disks - 1
