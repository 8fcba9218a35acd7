"""DAPO dynamic sampling: keep sampling groups until the batch holds enough with a learning signal.

Source: Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement Learning System at Scale", arXiv 2503.14476.
A group whose G rollouts all got the same return has zero group-relative advantage and is filtered out
(``algorithm.filter_zero_variance``); dynamic sampling then over-samples so that the update still sees the
configured number of groups. Here: collection 0 is the ordinary one (kept whole, so the logged reward and
success describe the task stream as before); while fewer than ``target`` of the batch's groups have
non-zero variance and fewer than ``tries`` collections were made, another collection of new tasks is made
and only its groups with variance are added (up to ``target`` in all), renumbered after the batch's.
``tries`` 1 is the plain collection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...collect.trajectory import Trajectory


def has_variance(group: Sequence[Trajectory]) -> bool:
    """Every member trainable and at least two different returns (the loop's zero-variance test)."""
    return all(t.trainable for t in group) and len({t.ret for t in group}) > 1


def _groups(trajectories: Sequence[Trajectory]) -> list[list[Trajectory]]:
    out: dict[int, list[Trajectory]] = {}
    for t in trajectories:
        out.setdefault(t.group, []).append(t)
    return list(out.values())


def collect_until_varied(collect_once: Callable[[int], list[Trajectory]], *, target: int,
                         tries: int) -> tuple[list[Trajectory], int]:
    """``(trajectories, collections made)``; ``collect_once(k)`` makes collection ``k`` (new tasks, new seeds).

    >>> batches = {0: [(0, 1.0), (0, 1.0), (1, 0.0), (1, 1.0)], 1: [(0, 0.0), (0, 1.0), (1, 0.0), (1, 0.0)]}
    >>> make = lambda k: [Trajectory([1], [1], [0.0], [0], 0, rewards=[r], group=g) for g, r in batches[k]]
    >>> out, made = collect_until_varied(make, target=2, tries=3)
    >>> made, [(t.group, t.ret) for t in out]
    (2, [(0, 1.0), (0, 1.0), (1, 0.0), (1, 1.0), (2, 0.0), (2, 1.0)])
    """
    trajectories = list(collect_once(0))
    found = sum(has_variance(g) for g in _groups(trajectories))
    next_group = max((t.group for t in trajectories), default=-1) + 1
    made = 1
    while found < target and made < tries:
        more = collect_once(made)
        made += 1
        for group in _groups(more):
            if found < target and has_variance(group):
                for t in group:
                    t.group = next_group
                next_group, found = next_group + 1, found + 1
                trajectories += group
    return trajectories, made
