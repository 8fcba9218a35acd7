"""Sudoku (4×4 and 9×9): fill the grid so that every row, column and box holds each digit once.

Native grammar (rows and columns 1-based): ``place 3 at r2c4``, ``r2c4=3`` (also ``r2c4 3``, ``put 3 in
r2c4``), and ``clear r2c4`` to erase a digit you placed. A placement that repeats a digit in a row, column or
box, or touches a given, is an invalid action (reward 0, the episode goes on). Placements are not checked
against the solution: a wrong but rule-abiding digit leads to a dead end you must clear. Reward 1.0 when the
grid is full (it then is the puzzle's unique solution); ``info["score"]`` is the fraction of the blank
cells currently holding their solution digit. ``state_key`` is the grid.

Valid actions are listed for 4×4 boards only (a 9×9 board has hundreds). Difficulty is the number of
givens: 4×4 easy/medium/hard 10/7/5, 9×9 40/32/26 (see ``rules.PRESETS``).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules

_CELL = r"r\s*(\d+)\s*,?\s*c\s*(\d+)"
_PLACE_FIRST = re.compile(rf"^(?:place|put|write|set|enter)?\s*(\d+)\s*(?:at|in|into|on|to)?\s*{_CELL}$")
_CELL_FIRST = re.compile(rf"^{_CELL}\s*(?:=|:|is|to|<-)?\s*(\d+)$")
_CLEAR = re.compile(rf"^(?:clear|erase|remove|delete|empty)\s*{_CELL}$")
_LIST_LIMIT_SIZE = 4


class SudokuEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with one action:': 'Actions:',
    }
    system_prompt = (
        "You are solving a Sudoku. Reply with one action: 'place <digit> at r<row>c<col>' (or 'r<row>c<col>=<digit>'), "
        "or 'clear r<row>c<col>' to erase a digit you placed. Rows and columns count from 1."
    )

    def __init__(self, size: int = 9, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if size not in (4, 9):
            raise ValueError(f"Sudoku size must be 4 or 9, got {size!r}")
        resolve_difficulty({d: None for n, d in rules.PRESETS if n == size}, difficulty, "Sudoku")
        self.size, self.difficulty = size, difficulty.lower()
        self.givens: rules.Grid = ()
        self.grid: rules.Grid = ()
        self.solution: rules.Grid = ()

    def _new_puzzle(self) -> tuple[rules.Grid, rules.Grid]:
        """The givens and solution of a new episode (a subclass may fix them: meta_envs' task design)."""
        return rules.generate(rules.PRESETS[(self.size, self.difficulty)], self.np_random)

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.givens, self.solution = self._new_puzzle()
        self.grid = self.givens
        n, box = self.size, "2×2" if self.size == 4 else "3×3"
        instruction = (
            f"Solve this {n}×{n} Sudoku: fill every empty cell (.) with a digit 1–{n} so that each row, each column "
            f"and each {box} box contains every digit exactly once. The puzzle has exactly one solution."
        )
        return f"{instruction}\n{self._render()}", {"instruction": instruction, "system_prompt": self.system_prompt}

    def _step(self, action: str) -> Step:
        kind, cell, digit = self._parse(action)
        n = self.size
        if self.givens[cell]:
            raise InvalidAction(f"{rules.cell_name(cell, n)} is a given ({self.givens[cell]}) and cannot change.")
        grid = list(self.grid)
        if kind == "clear":
            if not grid[cell]:
                raise InvalidAction(f"{rules.cell_name(cell, n)} is already empty.")
            grid[cell] = 0
            done = f"Cleared {rules.cell_name(cell, n)}."
        else:
            grid[cell] = 0
            clash = rules.conflict(tuple(grid), n, cell, digit)
            if clash is not None:
                raise InvalidAction(f"{digit} cannot go at {rules.cell_name(cell, n)}: {rules.cell_name(clash, n)} "
                                    f"already holds {digit} in the same row, column or box.")
            grid[cell] = digit
            done = f"Placed {digit} at {rules.cell_name(cell, n)}."
        self.grid = tuple(grid)
        return self._outcome(done)

    def _outcome(self, done: str) -> Step:
        blanks = [i for i, g in enumerate(self.givens) if not g]
        score = sum(self.grid[i] == self.solution[i] for i in blanks) / len(blanks)
        empty = self.grid.count(0)
        info = {"metrics": {"empty_cells": float(empty)}}
        if empty == 0 and rules.is_solved(self.grid, self.size):
            return Step(f"{done}\n{self._render()}\nSolved!", reward=1.0, terminated=True, won=True, score=1.0, info=info)
        left = f"{empty} empty cell{'s' if empty != 1 else ''} left."
        return Step(f"{done}\n{self._render()}\n{left}", score=score, info=info)

    def _parse(self, action: str) -> tuple[str, int, int]:
        """``(kind, cell, digit)`` from the action, with a helpful reason when it cannot be read."""
        text = normalise(action)
        n = self.size
        if m := _CLEAR.match(text):
            kind, row, col, digit = "clear", m.group(1), m.group(2), "0"
        elif m := _PLACE_FIRST.match(text):
            kind, digit, row, col = "place", m.group(1), m.group(2), m.group(3)
        elif m := _CELL_FIRST.match(text):
            kind, row, col, digit = "place", m.group(1), m.group(2), m.group(3)
        else:
            raise InvalidAction(f"Could not read {clip(action)}. Reply 'place <digit> at r<row>c<col>', "
                                "'r<row>c<col>=<digit>' or 'clear r<row>c<col>'.")
        if not (len(row + col) <= 4 and 1 <= int(row) <= n and 1 <= int(col) <= n):
            raise InvalidAction(f"Rows and columns go from 1 to {n}; got r{row[:4]}c{col[:4]}.")
        if kind == "place" and not (len(digit) == 1 and 1 <= int(digit) <= n):
            raise InvalidAction(f"Digits go from 1 to {n}; got {digit[:8]}.")
        return kind, (int(row) - 1) * n + int(col) - 1, int(digit)

    def _render(self) -> str:
        return rules.render(self.grid, self.size)

    def _legal_moves(self) -> list[str]:
        n = self.size
        moves = [f"clear {rules.cell_name(c, n)}" for c, v in enumerate(self.grid) if v and not self.givens[c]]
        for cell, digits in enumerate(rules.candidates(self.grid, n)):
            moves += [f"place {d} at {rules.cell_name(cell, n)}" for d in digits]
        return moves

    def valid_actions(self) -> list[str] | None:
        if self.size > _LIST_LIMIT_SIZE or not self.grid:
            return None
        return self._legal_moves()

    def expert_action(self) -> str:
        """Clear a wrong digit if there is one, else write the solution digit into the first empty cell."""
        n = self.size
        wrong = [i for i, v in enumerate(self.grid) if v and v != self.solution[i]]
        if wrong:
            return f"clear {rules.cell_name(wrong[0], n)}"
        cell = self.grid.index(0)
        return f"place {self.solution[cell]} at {rules.cell_name(cell, n)}"

    def random_action(self, rng: np.random.Generator) -> str:
        """Uniform over rule-abiding placements and clears (a random player that knows the rules)."""
        moves = self._legal_moves()
        return moves[int(rng.integers(len(moves)))]

    def state_key_material(self) -> str:
        return f"sudoku|{self.size}|" + "".join(map(str, self.grid))
