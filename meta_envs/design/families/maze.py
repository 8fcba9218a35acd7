"""Maze configs: the side, the seed that carves the maze, and optionally the start and exit rooms.

Without ``start``/``goal`` the instance is exactly what ``agentgym/Maze-v0``'s env of that size shows
after ``reset(seed=seed)`` (the maze is made by that env, not re-implemented here). The instance is the
maze's passages with the start and exit. Held out: the leaderboard's evaluation instances, i.e. the
registered sizes 4, 6 and 10 at the suites' reset seeds (:data:`~.base.EVAL_SEEDS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentgym_envs.examples.maze import MazeEnv
from agentgym_envs.examples.maze_rules import Maze

from .base import EVAL_SEEDS, ConfigError, Family

MAX_SIZE = 10
REGISTERED_SIZES = (4, 6, 10)
_CELL = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": MAX_SIZE - 1},
         "minItems": 2, "maxItems": 2, "description": "[row, column], 0-based"}
SCHEMA: dict = {
    "type": "object",
    "properties": {"size": {"type": "integer", "minimum": 2, "maximum": MAX_SIZE},
                   "seed": {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
                   "start": _CELL, "goal": _CELL},
    "required": ["size", "seed"],
    "additionalProperties": False,
}


class DesignedMaze(MazeEnv):
    """The maze env playing one fixed maze, start and exit on every reset."""

    def __init__(self, maze: Maze, start: tuple[int, int], goal: tuple[int, int], render_mode: str | None = None):
        super().__init__(size=maze.size, render_mode=render_mode)
        self.fixed = (maze, start, goal)

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.maze, self.position, self.goal = self.fixed
        self.moves = 0
        instruction = f"Find the exit of a {self.size}×{self.size} maze."
        optimal = self.maze.distances(self.position)[self.goal]
        return f"{instruction} {self._describe()}", {"instruction": instruction, "metrics": {"optimal_steps": optimal}}


def _carved(size: int, seed: int) -> tuple[Maze, tuple[int, int], tuple[int, int]]:
    """The maze, start and exit the registered env of this size shows after ``reset(seed=seed)``."""
    env = MazeEnv(size=size)
    env.reset(seed=seed)
    return env.maze, env.position, env.goal


def _instance(config: dict) -> tuple[Maze, tuple[int, int], tuple[int, int]]:
    size = config["size"]
    maze, start, goal = _carved(size, config["seed"])
    start, goal = tuple(config.get("start", start)), tuple(config.get("goal", goal))
    for name, cell in (("start", start), ("goal", goal)):
        if not all(0 <= v < size for v in cell):
            raise ConfigError(f"expected {name} inside the {size}x{size} maze (0..{size - 1}), got {list(cell)}")
    if start == goal:
        raise ConfigError(f"expected the exit away from the start, got both at {list(start)}")
    return maze, start, goal


def build(config: dict) -> DesignedMaze:
    return DesignedMaze(*_instance(config))


def _key(maze: Maze, start: tuple[int, int], goal: tuple[int, int]) -> list[Any]:
    passages = [f"{r},{c}:{''.join(sorted(d[0] for d in ds))}" for (r, c), ds in sorted(maze.passages.items())]
    return [maze.size, passages, list(start), list(goal)]


def instance_key(config: dict) -> list[Any]:
    return _key(*_instance(config))


def held_out() -> list[tuple[str, list[Any]]]:
    return [(f"maze/size{n}/seed{s}", _key(*_carved(n, s))) for n in REGISTERED_SIZES for s in EVAL_SEEDS]


def example(rng: np.random.Generator) -> dict:
    return {"size": int(rng.integers(3, 8)), "seed": int(rng.integers(2**31))}


FAMILY = Family(
    name="maze",
    description=("A maze of size x size rooms carved from a seed (the same maze agentgym/Maze-v0 of that size shows "
                 "after reset(seed)); start and goal ([row, column]) move the start and the exit. Larger mazes and "
                 "farther exits are harder. Held out: the leaderboard's mazes (sizes 4, 6, 10 at seeds 10000-10019)."),
    schema=SCHEMA, max_steps=100, build=build, instance_key=instance_key, held_out=held_out, example=example,
)
