"""Pure Minesweeper rules: boards, flood reveals, a deduction solver and no-guess board generation.

Cells are indices ``r * cols + c``. Mines are placed only after the first reveal, away from the revealed
cell and its neighbours, so the first reveal always opens an area. Boards are **no-guess**: the generator
redraws mines until :func:`deduce`, starting from that first reveal, can clear the whole board. The same
deduction is the scripted expert, so the expert never guesses and wins every generated board.

Deduction rules (sound, applied to a fixpoint): a number whose unknown neighbours must all be mines or all
safe; the subset rule (a number's unknown cells inside another's leave ``k₂ − k₁`` mines in the rest);
and the global mine count (all unknowns are mines, or none are).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import numpy as np


@dataclass(frozen=True)
class MinesweeperPreset:
    """One difficulty: board size and number of mines."""

    rows: int
    cols: int
    mines: int


PRESETS: dict[str, MinesweeperPreset] = {
    "easy": MinesweeperPreset(6, 6, 5),
    "medium": MinesweeperPreset(8, 8, 10),
    "hard": MinesweeperPreset(12, 12, 24),
}

#: Mine layouts tried before giving up on a first reveal (never reached by the presets, see tests).
MAX_LAYOUTS = 2000


@lru_cache(maxsize=16)
def neighbours(rows: int, cols: int) -> tuple[tuple[int, ...], ...]:
    """For each cell, the up-to-eight cells around it."""
    result = []
    for r in range(rows):
        for c in range(cols):
            result.append(tuple((r + dr) * cols + c + dc for dr in (-1, 0, 1) for dc in (-1, 0, 1)
                                if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols))
    return tuple(result)


def counts(mines: frozenset[int], rows: int, cols: int) -> tuple[int, ...]:
    """For each cell, how many of its neighbours are mines."""
    nb = neighbours(rows, cols)
    return tuple(sum(j in mines for j in nb[i]) for i in range(rows * cols))


def flood(
    start: int, numbers: tuple[int, ...], mines: frozenset[int], revealed: Iterable[int], rows: int, cols: int
) -> set[int]:
    """Cells uncovered by revealing safe ``start``: zeros open their neighbours, recursively."""
    nb = neighbours(rows, cols)
    seen = set(revealed)
    opened, stack = set(), [start]
    while stack:
        cell = stack.pop()
        if cell in seen or cell in mines:
            continue
        seen.add(cell)
        opened.add(cell)
        if numbers[cell] == 0:
            stack.extend(nb[cell])
    return opened


def deduce(
    numbers: dict[int, int], covered: set[int], total_mines: int, rows: int, cols: int
) -> tuple[set[int], set[int]]:
    """Covered cells proven safe and proven mines, from the revealed ``numbers`` (cell → count) alone."""
    nb = neighbours(rows, cols)
    safe: set[int] = set()
    mines: set[int] = set()
    # Only numbers touching a covered cell constrain anything; the frontier only shrinks as facts are learnt.
    frontier = [(cell, number, [j for j in nb[cell] if j in covered]) for cell, number in numbers.items()]
    frontier = [entry for entry in frontier if entry[2]]
    while True:
        constraints = []
        for cell, number, around in frontier:
            unknown = frozenset(j for j in around if j not in safe and j not in mines)
            if unknown:
                constraints.append((unknown, number - sum(j in mines for j in around)))
        if not _apply(constraints, safe, mines) and not _apply_subsets(constraints, safe, mines):
            unknown = covered - safe - mines
            if not unknown or not _apply([(frozenset(unknown), total_mines - len(mines))], safe, mines):
                return safe, mines


def _apply(constraints: list[tuple[frozenset[int], int]], safe: set[int], mines: set[int]) -> bool:
    """Trivial constraints: ``k = 0`` (all safe) or ``k = |cells|`` (all mines). True if anything was learnt."""
    learnt = False
    for cells, k in constraints:
        if k == 0 and not cells <= safe:
            safe |= cells
            learnt = True
        elif k == len(cells) and not cells <= mines:
            mines |= cells
            learnt = True
    return learnt


def _apply_subsets(constraints: list[tuple[frozenset[int], int]], safe: set[int], mines: set[int]) -> bool:
    """The subset rule over pairs of constraints that share a cell."""
    by_cell: dict[int, list[int]] = {}
    for index, (cells, _) in enumerate(constraints):
        for cell in cells:
            by_cell.setdefault(cell, []).append(index)
    derived = []
    for index, (small, k_small) in enumerate(constraints):
        others = set(by_cell[next(iter(small))])
        for other in others:
            big, k_big = constraints[other]
            if other != index and small < big:
                derived.append((big - small, k_big - k_small))
    return _apply(derived, safe, mines)


def solves(mines: frozenset[int], first: int, preset: MinesweeperPreset) -> bool:
    """Whether deduction alone, starting by revealing ``first``, clears every safe cell."""
    rows, cols = preset.rows, preset.cols
    numbers = counts(mines, rows, cols)
    revealed = flood(first, numbers, mines, (), rows, cols)
    target = rows * cols - len(mines)
    while len(revealed) < target:
        covered = set(range(rows * cols)) - revealed
        safe, _ = deduce({c: numbers[c] for c in revealed}, covered, len(mines), rows, cols)
        if not safe:
            return False
        for cell in safe:
            revealed |= flood(cell, numbers, mines, revealed, rows, cols)
    return True


def generate(preset: MinesweeperPreset, first: int, rng: np.random.Generator) -> frozenset[int]:
    """Mines for a no-guess board whose first reveal is ``first`` (kept clear with its neighbours)."""
    rows, cols = preset.rows, preset.cols
    keep_clear = {first, *neighbours(rows, cols)[first]}
    allowed = np.array([c for c in range(rows * cols) if c not in keep_clear])
    for _ in range(MAX_LAYOUTS):
        mines = frozenset(int(c) for c in rng.choice(allowed, size=preset.mines, replace=False))
        if solves(mines, first, preset):
            return mines
    raise RuntimeError(f"no no-guess layout found in {MAX_LAYOUTS} tries for {preset} from cell {first}")
