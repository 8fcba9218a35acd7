"""What a task family is: schema, builder, expert, instance content and held-out instances.

Each family module defines ``FAMILY = Family(...)``. The builder returns a *fresh* text env whose every
``reset`` plays the configured instance (the reset seed moves only the env's own RNG), so the solver's
``k`` plays differ only in the solver's randomness and ``check_env`` can build as many copies as it needs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from agentgym_envs.core import TextEnv


class ConfigError(ValueError):
    """A config the schema admits but the family cannot build ("expected X, got Y"): the designer's error."""


@dataclass(frozen=True)
class Family:
    """One family a designer writes task configs for.

    name: the family's name in briefs and ``info["family"]``.
    description: what a config means, for the brief (one paragraph).
    schema: the JSON schema of a config (the subset :mod:`.schema` validates).
    max_steps: steps a play may take before it counts as a loss (the registered ids' step limit), or a
        function of the config (a 9×9 Sudoku needs more steps than a 4×4 one); read it with :meth:`steps`.
    build: config -> a fresh env playing that instance; raises :class:`ConfigError` for configs the
        schema admits but the family cannot build (an object the floorplan has no place for, a clash).
    instance_key: config -> the built instance's content as JSON-able data (what the instance hash hashes).
    held_out: the family's ``valid``/``test`` instances as ``(instance id, instance key)`` pairs.
    example: rng -> a config the expert solves and that copies no held-out instance (the scripted
        designer, and TaskDesign-v0's ``expert_action``).
    reserved: config -> why it uses something reserved for held-out evaluation (a floorplan or pair only
        ``valid_unseen`` may use), or None.
    """

    name: str
    description: str
    schema: dict
    max_steps: int | Callable[[dict], int]
    build: Callable[[dict], TextEnv]
    instance_key: Callable[[dict], Any]
    held_out: Callable[[], Iterable[tuple[str, Any]]]
    example: Callable[[np.random.Generator], dict]
    reserved: Callable[[dict], str | None] = lambda config: None

    def steps(self, config: dict) -> int:
        """The step limit of one play of ``config``."""
        return self.max_steps(config) if callable(self.max_steps) else self.max_steps


def instance_hash(family: str, key: Any) -> str:
    """SHA-256 of a family's instance content (canonical JSON: sorted keys, no spaces).

    >>> instance_hash("maze", [1, 2]) == instance_hash("maze", (1, 2))
    True
    """
    text = json.dumps([family, key], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


#: Reset seeds of the leaderboard suites' evaluation episodes (``leaderboards/suites/*.yaml``: seed 10000,
#: 20 tasks): the held-out instances of the seeded game families, which have no split of their own.
EVAL_SEEDS = tuple(range(10_000, 10_020))


def pick(rng: np.random.Generator, items: list | tuple) -> Any:
    """One item of ``items`` drawn with ``rng``."""
    return items[int(rng.integers(len(items)))]
