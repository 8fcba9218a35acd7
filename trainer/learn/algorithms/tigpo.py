"""TIGPO: graph credit over a persistent per-task transition graph, and revisits of earlier tasks.

Source: "Temporal Instance-Graph Policy Optimization" (TIGPO; known here from its abstract only; no arXiv id
could be found). Its abstract gives the design, not the formulas; ours:

* **Persistent graph.** :class:`TaskGraphMemory` keeps, per task, the transitions (``state_key`` edges,
  :func:`trainer.learn.algorithms.graph.episode_edges`) of every group trained on it, from every earlier policy.
  The distances of the graph credit (:mod:`trainer.learn.algorithms.graph`) are computed over the batch's
  edges plus these. History is a *detached statistic*: it moves distances and baselines; its trajectories
  are never scored or replayed in the loss.
* **Revisit slots.** A fraction ``revisit_fraction`` of each step's task groups (rounded down) re-attempt
  tasks explored at an earlier step, drawn without replacement by a generator seeded from the run seed and
  the step; the other slots are the ordinary task stream (*exploration* slots).
* **Cross-temporal reference.** A revisit group's episode advantage uses the current returns *and* the
  returns of the task's last exploration group as the baseline's sample:
  ``A^E_i = (R_i − mean(R ∪ R_ref)) / (std(R ∪ R_ref) + ε)`` (unbiased std over the pooled returns), for
  the current rollouts only. A larger reference steadies small groups, and a group that solves a task its
  earlier group failed gets credit even when its own returns are all equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ...collect.trajectory import Trajectory
from ...seeding import derive_seed
from .graph import Edge, episode_edges

_REVISIT = 8
"""Derived-seed purpose of the revisit draws (distinct from the loop's and the update's)."""
MAX_EDGES_PER_TASK = 512
"""Distinct transitions kept per task (the oldest go first): bounds the memory on long runs."""


def cross_temporal_advantages(current: Sequence[float], reference: Sequence[float], *, normalize_std: bool = True,
                              eps: float = 1e-6) -> list[float]:
    """Advantages of ``current`` against the baseline of ``current ∪ reference``.

    >>> [round(a, 4) for a in cross_temporal_advantages([1.0, 0.0], [0.0, 0.0])]  # pooled mean 0.25, std 0.5
    [1.5, -0.5]
    """
    pooled = torch.tensor([*current, *reference], dtype=torch.float64)
    centred = torch.tensor(list(current), dtype=torch.float64) - pooled.mean()
    if normalize_std:
        centred = centred / (pooled.std(unbiased=True) + eps)
    return centred.tolist()


def group_edges(group: Sequence[Trajectory]) -> list[Edge]:
    """The known transitions of one group's trajectories (dead ends dropped: they never reach success)."""
    out: list[Edge] = []
    for t in group:
        for e in episode_edges(t.state_keys, t.won, t.finish == "terminated"):
            if e is not None and not e[1].startswith("\x00dead-end"):
                out.append(e)
    return out


class TaskGraphMemory:
    """Per-task transitions, last exploration returns, and the revisit slots of the current step.

    Owned by the trainer and saved in its checkpoint (:meth:`state_dict` holds plain lists and numbers).
    """

    def __init__(self, *, revisit_fraction: float, seed: int, max_tasks: int = 1024):
        self.revisit_fraction, self.seed, self.max_tasks = revisit_fraction, seed, max_tasks
        self._edges: dict[int, list[Edge]] = {}
        self._reference: dict[int, list[float]] = {}
        self._explored: list[int] = []  # tasks with an exploration group, oldest first
        self.revisit_groups: dict[int, int] = {}  # this step's revisit slots: group id -> task

    # ------------------------------------------------------------ the step's tasks
    def next_tasks(self, fresh: Callable[[int], list[int]], n: int, step: int) -> list[int]:
        """``n`` tasks for this step: revisit slots first (groups ``0..r-1``), then ``fresh(n - r)``."""
        r = min(int(self.revisit_fraction * n), len(self._explored))
        rng = np.random.default_rng(derive_seed(self.seed, _REVISIT, step))
        revisits = [self._explored[i] for i in rng.choice(len(self._explored), size=r, replace=False)] if r else []
        self.revisit_groups = dict(enumerate(revisits))
        return revisits + fresh(n - r)

    # ------------------------------------------------------------ statistics the estimator reads
    def edges(self, task: int) -> list[Edge]:
        return list(self._edges.get(task, ()))

    def reference(self, group: Sequence[Trajectory]) -> list[float] | None:
        """The earlier exploration returns paired with ``group``, if it fills a revisit slot."""
        first = group[0]
        if self.revisit_groups.get(first.group) != first.task_index:
            return None
        return list(self._reference.get(first.task_index, ())) or None

    # ------------------------------------------------------------ after the update
    def record(self, groups: Sequence[Sequence[Trajectory]]) -> None:
        """Add the transitions of this step's fresh groups; exploration groups become their task's reference."""
        for group in groups:
            task = group[0].task_index
            known = self._edges.setdefault(task, [])
            for e in group_edges(group):
                if e not in known:
                    known.append(e)
            del known[:-MAX_EDGES_PER_TASK]
            if self.reference(group) is None:  # an exploration slot
                self._reference[task] = [t.ret for t in group]
                if task in self._explored:
                    self._explored.remove(task)
                self._explored.append(task)
        for task in self._explored[:-self.max_tasks]:
            self._edges.pop(task, None)
            self._reference.pop(task, None)
        del self._explored[:-self.max_tasks]
        self.revisit_groups = {}

    # ------------------------------------------------------------ checkpoint
    def state_dict(self) -> dict[str, Any]:
        tasks = sorted(set(self._edges) | set(self._reference))
        return {"tasks": [[task, [list(e) for e in self._edges.get(task, ())], self._reference.get(task, [])] for task in tasks],
                "explored": list(self._explored)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._edges = {int(task): [(str(a), str(b)) for a, b in edges] for task, edges, _ in state["tasks"]}
        self._reference = {int(task): [float(x) for x in ref] for task, _, ref in state["tasks"] if ref}
        self._explored = [int(task) for task in state["explored"]]
        self.revisit_groups = {}
