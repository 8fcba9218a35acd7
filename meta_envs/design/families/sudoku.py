"""Sudoku configs: the board side and the givens, as one string of ``size²`` cells (``0`` or ``.`` = blank).

The givens must not clash and must leave exactly one solution (the env promises a unique one), else
the config fails the ``schema`` gate with the count found. The instance is the side with the givens.
Held out: the leaderboard's puzzles (4×4 and 9×9 at every difficulty, at the suites' reset seeds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentgym_envs.games.sudoku import rules
from agentgym_envs.games.sudoku.env import SudokuEnv

from .base import EVAL_SEEDS, ConfigError, Family, pick

SCHEMA: dict = {
    "type": "object",
    "properties": {"size": {"type": "integer", "enum": [4, 9]},
                   "grid": {"type": "string", "pattern": r"[0-9.]{16}|[0-9.]{81}",
                            "description": "row-major cells, 0 or . for a blank"}},
    "required": ["size", "grid"],
    "additionalProperties": False,
}


class DesignedSudoku(SudokuEnv):
    """The Sudoku env playing one fixed puzzle on every reset."""

    def __init__(self, size: int, givens: rules.Grid, solution: rules.Grid, render_mode: str | None = None):
        super().__init__(size=size, render_mode=render_mode)
        self.fixed = (givens, solution)

    def _new_puzzle(self) -> tuple[rules.Grid, rules.Grid]:
        return self.fixed


def _givens(config: dict) -> rules.Grid:
    n, text = config["size"], config["grid"]
    if len(text) != n * n:
        raise ConfigError(f"expected {n * n} cells for a {n}x{n} board, got {len(text)}")
    grid = tuple(0 if ch == "." else int(ch) for ch in text)
    if any(v > n for v in grid):
        raise ConfigError(f"expected digits 1-{n} (0 or . for blanks), got {max(grid)}")
    for cell, digit in enumerate(grid):
        clash = rules.conflict(grid[:cell] + (0,) + grid[cell + 1:], n, cell, digit) if digit else None
        if clash is not None:
            raise ConfigError(f"expected givens that do not clash, got {digit} at {rules.cell_name(cell, n)} and "
                              f"{rules.cell_name(clash, n)}")
    if 0 not in grid:
        raise ConfigError("expected at least one blank cell, got a full grid")
    return grid


def build(config: dict) -> DesignedSudoku:
    n, givens = config["size"], _givens(config)
    count = rules.count_solutions(givens, n)
    if count != 1:
        raise ConfigError(f"expected givens with exactly one solution, got {'none' if count == 0 else 'several'}")
    return DesignedSudoku(n, givens, rules.solve(givens, n))


def instance_key(config: dict) -> list[Any]:
    return [config["size"], "".join(map(str, _givens(config)))]


def held_out() -> list[tuple[str, list[Any]]]:
    found = []
    for (n, difficulty) in rules.PRESETS:
        env = SudokuEnv(size=n, difficulty=difficulty)
        for seed in EVAL_SEEDS:
            env.reset(seed=seed)
            found.append((f"sudoku/{n}x{n}-{difficulty}/seed{seed}", [n, "".join(map(str, env.givens))]))
    return found


def example(rng: np.random.Generator) -> dict:
    n = 4 if rng.random() < 0.75 else 9
    difficulty = pick(rng, ("easy", "medium", "hard"))
    givens, _ = rules.generate(rules.PRESETS[(n, difficulty)], rng)
    return {"size": n, "grid": "".join(map(str, givens))}


FAMILY = Family(
    name="sudoku",
    description=("A Sudoku puzzle: size 4 or 9 and the grid as one row-major string of size*size cells, digits for "
                 "givens and 0 or . for blanks. Givens must not clash and must leave exactly one solution; fewer "
                 "givens are harder. Held out: the leaderboard's puzzles."),
    schema=SCHEMA, max_steps=lambda config: 40 if config["size"] == 4 else 170, build=build,
    instance_key=instance_key, held_out=held_out, example=example,
)
