"""Minesweeper: reveal every safe cell without touching a mine.

Native grammar (rows and columns 1-based): ``reveal <row> <col>`` (also ``reveal r3c4``, ``reveal 3,4``,
``open``/``click``/``dig``), ``flag <row> <col>`` and ``unflag <row> <col>``. Revealing a covered, unflagged
cell is the only move with consequences; flags are notes for the agent. Repeated reveals, flagged targets
and off-board cells are invalid actions (reward 0, the episode goes on).

The first reveal is always safe and opens an area: mines are laid only then, away from that cell, and
the board is **no-guess** — it can be cleared by deduction from there (see ``rules``); the scripted
expert is that deduction and wins every board. Reward 1.0 when every safe cell is revealed (won); a mine
ends the episode (lost). ``info["score"]`` is the fraction of safe cells revealed. ``state_key`` is the
board as the agent sees it. Valid actions are not listed (a board has up to 144 cells).

Difficulty: ``easy`` 6×6 with 5 mines, ``medium`` 8×8 with 10, ``hard`` 12×12 with 24.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules

_VERBS = {"reveal": "reveal", "open": "reveal", "click": "reveal", "dig": "reveal", "uncover": "reveal",
          "flag": "flag", "mark": "flag", "unflag": "unflag", "unmark": "unflag"}
_ACTION = re.compile(r"^([a-z]+)\s*(?:cell\s*)?\(?\s*r?\s*(\d{1,4})\s*(?:,|\s|c)\s*c?\s*(\d{1,4})\s*\)?$")


class MinesweeperEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with one action:': 'Actions:',
    }
    system_prompt = (
        "You are playing Minesweeper. Reply with one action: 'reveal <row> <col>', 'flag <row> <col>' or "
        "'unflag <row> <col>' (rows and columns count from 1). In the board, # is covered, F is a flag, "
        ". is an empty cell and a digit counts the mines among the eight neighbours."
    )

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        resolve_difficulty(rules.PRESETS, difficulty, "Minesweeper")
        self.difficulty = difficulty.lower()
        self.mines: frozenset[int] | None = None
        self.numbers: tuple[int, ...] = ()
        self.revealed: frozenset[int] = frozenset()
        self.flags: frozenset[int] = frozenset()
        self.exploded: int | None = None

    @property
    def preset(self) -> rules.MinesweeperPreset:
        return rules.PRESETS[self.difficulty]

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        p = self.preset
        self.mines, self.numbers, self.exploded = None, (), None
        self.revealed, self.flags = frozenset(), frozenset()
        instruction = (
            f"Clear a {p.rows}×{p.cols} Minesweeper board hiding {p.mines} mines: reveal every cell that is not a "
            "mine. A revealed digit counts the mines among its eight neighbours. Your first reveal is always "
            "safe, and the board can be cleared by logic alone, without guessing."
        )
        return f"{instruction}\n{self._render()}", {"instruction": instruction, "system_prompt": self.system_prompt}

    def _step(self, action: str) -> Step:
        verb, cell = self._parse(action)
        name = self._name(cell)
        if cell in self.revealed:
            raise InvalidAction(f"{name} is already revealed.")
        if verb == "flag":
            if cell in self.flags:
                raise InvalidAction(f"{name} is already flagged; 'unflag' removes a flag.")
            self.flags = self.flags | {cell}
            return Step(f"Flagged {name}.\n{self._render()}")
        if verb == "unflag":
            if cell not in self.flags:
                raise InvalidAction(f"{name} has no flag.")
            self.flags = self.flags - {cell}
            return Step(f"Removed the flag on {name}.\n{self._render()}")
        if cell in self.flags:
            raise InvalidAction(f"{name} is flagged; unflag it before revealing it.")
        return self._reveal(cell)

    def _reveal(self, cell: int) -> Step:
        p = self.preset
        if self.mines is None:
            self.mines = rules.generate(p, cell, self.np_random)
            self.numbers = rules.counts(self.mines, p.rows, p.cols)
        if cell in self.mines:
            self.exploded = cell
            return Step(f"BOOM! {self._name(cell)} was a mine. Game over.\n{self._render()}", terminated=True,
                        won=False, score=self._progress())
        self.revealed = self.revealed | rules.flood(cell, self.numbers, self.mines, self.revealed, p.rows, p.cols)
        self.flags = self.flags - self.revealed
        info = {"metrics": {"revealed": float(len(self.revealed))}}
        if len(self.revealed) == p.rows * p.cols - p.mines:
            return Step(f"Board cleared!\n{self._render()}", reward=1.0, terminated=True, won=True, score=1.0, info=info)
        return Step(f"Revealed {self._name(cell)}.\n{self._render()}", score=self._progress(), info=info)

    def _parse(self, action: str) -> tuple[str, int]:
        match = _ACTION.match(normalise(action))
        verb = _VERBS.get(match.group(1)) if match else None
        if verb is None:
            raise InvalidAction(f"Could not read {clip(action)}. Reply 'reveal <row> <col>', 'flag <row> <col>' "
                                "or 'unflag <row> <col>', e.g. 'reveal 3 4'.")
        p = self.preset
        row, col = int(match.group(2)), int(match.group(3))
        if not (1 <= row <= p.rows and 1 <= col <= p.cols):
            raise InvalidAction(f"Rows go from 1 to {p.rows} and columns from 1 to {p.cols}; got row {row}, column {col}.")
        return verb, (row - 1) * p.cols + col - 1

    def _progress(self) -> float:
        p = self.preset
        return len(self.revealed) / (p.rows * p.cols - p.mines)

    def _name(self, cell: int) -> str:
        return f"row {cell // self.preset.cols + 1}, column {cell % self.preset.cols + 1}"

    def _render(self) -> str:
        p = self.preset
        lines = ["    " + " ".join(f"{c + 1:>2}" for c in range(p.cols))]
        for r in range(p.rows):
            lines.append(f"{r + 1:>2}  " + " ".join(f"{self._symbol(r * p.cols + c):>2}" for c in range(p.cols)))
        return "\n".join(lines)

    def _symbol(self, cell: int) -> str:
        if cell in self.revealed:
            return str(self.numbers[cell]) if self.numbers[cell] else "."
        if self.exploded is not None and self.mines and cell in self.mines:
            return "X" if cell == self.exploded else "*"
        return "F" if cell in self.flags else "#"

    def expert_action(self) -> str:
        """Reveal the centre first, then a cell proven safe by deduction (unflagging it if needed)."""
        p = self.preset
        if self.mines is None:
            return f"reveal {p.rows // 2 + 1} {p.cols // 2 + 1}"
        covered = set(range(p.rows * p.cols)) - self.revealed
        safe, _ = rules.deduce({c: self.numbers[c] for c in self.revealed}, covered, p.mines, p.rows, p.cols)
        # On a generated board deduction always finds a safe cell; the fallback only keeps the expert total.
        cell = min(safe) if safe else min(covered - self.flags or covered)
        verb = "unflag" if cell in self.flags else "reveal"
        return f"{verb} {cell // p.cols + 1} {cell % p.cols + 1}"

    def random_action(self, rng: np.random.Generator) -> str:
        """Reveal a uniformly random covered, unflagged cell."""
        p = self.preset
        options = sorted(set(range(p.rows * p.cols)) - self.revealed - self.flags)
        cell = options[int(rng.integers(len(options)))]
        return f"reveal {cell // p.cols + 1} {cell % p.cols + 1}"

    def state_key_material(self) -> str:
        return f"minesweeper|{self.difficulty}|{self._render()}"
