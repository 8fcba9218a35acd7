"""Countdown configs: the numbers and the target of one numbers round (one-shot: a single expression).

The instance is the sorted numbers with the target. The expert (iterative-deepening search) must reach
the target, so an unreachable target fails the ``expert`` gate. Held out: the leaderboard's rounds
(every difficulty of ``agentgym/Countdown-v0`` at the suites' reset seeds; the stepwise ids share them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentgym_envs.games.countdown import rules
from agentgym_envs.games.countdown.env import CountdownEnv

from .base import EVAL_SEEDS, ConfigError, Family, pick

SCHEMA: dict = {
    "type": "object",
    "properties": {"numbers": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 100},
                               "minItems": 2, "maxItems": 6},
                   "target": {"type": "integer", "minimum": 1, "maximum": 999}},
    "required": ["numbers", "target"],
    "additionalProperties": False,
}


class DesignedCountdown(CountdownEnv):
    """The one-shot Countdown env playing one fixed round on every reset."""

    def __init__(self, numbers: tuple[int, ...], target: int, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        self.fixed = (numbers, target)

    def _new_puzzle(self) -> str:
        self.numbers, self.target = self.fixed
        return f"Numbers: {' '.join(map(str, self.numbers))}. Target: {self.target}."


def _round(config: dict) -> tuple[tuple[int, ...], int]:
    numbers, target = tuple(sorted(config["numbers"])), config["target"]
    if target in numbers:
        raise ConfigError(f"expected a target that is not one of the numbers, got {target} in {list(numbers)}")
    return numbers, target


def build(config: dict) -> DesignedCountdown:
    return DesignedCountdown(*_round(config))


def instance_key(config: dict) -> list[Any]:
    numbers, target = _round(config)
    return [list(numbers), target]


def held_out() -> list[tuple[str, list[Any]]]:
    found = []
    for difficulty in rules.PRESETS:
        env = CountdownEnv(difficulty=difficulty)
        for seed in EVAL_SEEDS:
            env.reset(seed=seed)
            found.append((f"countdown/{difficulty}/seed{seed}", [list(env.numbers), env.target]))
    return found


def example(rng: np.random.Generator) -> dict:
    numbers, target = rules.generate(rules.PRESETS[pick(rng, tuple(rules.PRESETS))], rng)
    return {"numbers": [int(n) for n in numbers], "target": int(target)}


FAMILY = Family(
    name="countdown",
    description=("A Countdown numbers round: 2-6 numbers (1-100) and a target (1-999) the solver must hit with one "
                 "expression using + - * / and each number at most once; every intermediate result a positive "
                 "whole number. The target must be reachable. Held out: the leaderboard's rounds."),
    schema=SCHEMA, max_steps=5, build=build, instance_key=instance_key, held_out=held_out, example=example,
)
