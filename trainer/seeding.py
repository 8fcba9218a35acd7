"""Seeds derived from the run's seed, and the process RNG states a checkpoint must carry.

Library code never draws from global RNGs: every random choice uses a generator seeded by
:func:`~agentgym_envs.seeding.derive_seed` (the project's one seed derivation, re-exported here) from the
run seed and a position (update step, purpose), so a resumed run makes the same draws as an uninterrupted
one. Global states (python, numpy, torch) are still saved and restored, for user code and third-party
libraries that do use them.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from agentgym_envs.seeding import derive_seed

__all__ = ["TaskSampler", "capture_rng", "derive_seed", "restore_rng"]


def capture_rng() -> dict[str, Any]:
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def restore_rng(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


class TaskSampler:
    """Train tasks in a fresh seeded permutation each epoch; ``cursor`` is the data position to checkpoint.

    >>> s = TaskSampler(5, seed=0); a = s.next(3); state = s.state_dict(); b = s.next(3)
    >>> t = TaskSampler(5, seed=0); t.load_state_dict(state); t.next(3) == b
    True
    """

    def __init__(self, num_tasks: int, seed: int):
        if num_tasks < 1:
            raise ValueError(f"need at least one task, got {num_tasks}")
        self.num_tasks, self.seed = num_tasks, seed
        self.epoch, self.cursor = 0, 0

    def _order(self) -> np.ndarray:
        return np.random.default_rng(derive_seed(self.seed, 7, self.epoch)).permutation(self.num_tasks)

    def next(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n:
            order = self._order()
            take = min(n - len(out), self.num_tasks - self.cursor)
            out += order[self.cursor:self.cursor + take].tolist()
            self.cursor += take
            if self.cursor == self.num_tasks:
                self.epoch, self.cursor = self.epoch + 1, 0
        return out

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "cursor": self.cursor, "num_tasks": self.num_tasks, "seed": self.seed}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if (state["num_tasks"], state["seed"]) != (self.num_tasks, self.seed):
            raise ValueError("the checkpoint's task sampler was built for a different task set or seed")
        self.epoch, self.cursor = state["epoch"], state["cursor"]
