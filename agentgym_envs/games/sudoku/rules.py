"""Pure Sudoku rules: grids, conflicts, a bitmask solver that counts solutions, and a seeded generator.

A grid is a tuple of ``n * n`` ints in row-major order (``0`` = empty) for ``n`` in {4, 9}; boxes are
``√n × √n``. The generator fills a random solved grid, then empties cells in random order while the puzzle
keeps exactly one solution, until the preset's number of givens is reached (or no further cell can be
emptied, for the hard presets: then the puzzle is minimal and has a few more givens than asked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

Grid = tuple[int, ...]


@dataclass(frozen=True)
class SudokuPreset:
    """One difficulty: board side ``n`` and the target number of givens (fewer givens, harder puzzle)."""

    n: int
    givens: int


PRESETS: dict[tuple[int, str], SudokuPreset] = {
    (4, "easy"): SudokuPreset(4, 10), (4, "medium"): SudokuPreset(4, 7), (4, "hard"): SudokuPreset(4, 5),
    (9, "easy"): SudokuPreset(9, 40), (9, "medium"): SudokuPreset(9, 32), (9, "hard"): SudokuPreset(9, 26),
}


@lru_cache(maxsize=4)
def units(n: int) -> tuple[tuple[int, int, int], ...]:
    """For each cell ``i``: its ``(row, column, box)`` indices."""
    b = math.isqrt(n)
    return tuple((i // n, i % n, (i // n) // b * b + (i % n) // b) for i in range(n * n))


@lru_cache(maxsize=4)
def peers(n: int) -> tuple[frozenset[int], ...]:
    """For each cell, the other cells sharing its row, column or box."""
    u = units(n)
    return tuple(
        frozenset(j for j in range(n * n) if j != i and any(a == b for a, b in zip(u[i], u[j]))) for i in range(n * n)
    )


def conflict(grid: Grid, n: int, cell: int, digit: int) -> int | None:
    """A peer of ``cell`` that already holds ``digit`` (the placement breaks a rule), else ``None``."""
    return next((j for j in sorted(peers(n)[cell]) if grid[j] == digit), None)


def candidates(grid: Grid, n: int) -> list[tuple[int, ...]]:
    """For each cell, the digits that break no rule there (``()`` for filled cells)."""
    u = units(n)
    used: dict[tuple[int, int], set[int]] = {}
    for i, d in enumerate(grid):
        if d:
            for kind, index in enumerate(u[i]):
                used.setdefault((kind, index), set()).add(d)
    empty: set[int] = set()
    return [
        () if grid[i] else tuple(d for d in range(1, n + 1)
                                 if not any(d in used.get((kind, index), empty) for kind, index in enumerate(u[i])))
        for i in range(n * n)
    ]


def is_solved(grid: Grid, n: int) -> bool:
    """Full and every row, column and box holds each digit once."""
    return 0 not in grid and all(conflict(grid, n, i, grid[i]) is None for i in range(n * n))


def count_solutions(grid: Grid, n: int, limit: int = 2) -> int:
    """Number of solutions of ``grid``, counting no further than ``limit``."""
    found: list[Grid] = []
    _search(grid, n, limit, found, rng=None)
    return len(found)


def solve(grid: Grid, n: int) -> Grid | None:
    """One solution of ``grid`` (the first in digit order), or ``None`` when it has none."""
    found: list[Grid] = []
    _search(grid, n, 1, found, rng=None)
    return found[0] if found else None


def random_solution(n: int, rng: np.random.Generator) -> Grid:
    """A random full grid: the search tries each cell's digits in an order drawn from ``rng``."""
    found: list[Grid] = []
    _search((0,) * (n * n), n, 1, found, rng=rng)
    return found[0]


def generate(preset: SudokuPreset, rng: np.random.Generator) -> tuple[Grid, Grid]:
    """A ``(puzzle, solution)`` pair; the puzzle has exactly one solution."""
    n = preset.n
    solution = random_solution(n, rng)
    puzzle = list(solution)
    givens = n * n
    for cell in rng.permutation(n * n):
        if givens <= preset.givens:
            break
        puzzle[cell] = 0
        if count_solutions(tuple(puzzle), n) == 1:
            givens -= 1
        else:
            puzzle[cell] = solution[cell]
    return tuple(puzzle), solution


def _masks(grid: Grid, n: int) -> tuple[list[int], list[int], list[int]] | None:
    """Bitmasks of the digits used in each row, column and box; ``None`` when the givens already clash."""
    u = units(n)
    rows, cols, boxes = [0] * n, [0] * n, [0] * n
    for i, d in enumerate(grid):
        if d:
            r, c, b = u[i]
            bit = 1 << d
            if (rows[r] | cols[c] | boxes[b]) & bit:
                return None
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
    return rows, cols, boxes


def _search(grid: Grid, n: int, limit: int, found: list[Grid], rng: np.random.Generator | None) -> None:
    """Depth-first search on bitmasks, always branching on the empty cell with fewest candidates."""
    masks = _masks(grid, n)
    if masks is None:
        return
    rows, cols, boxes = masks
    full, u = (1 << (n + 1)) - 2, units(n)  # ``full``: bits 1..n
    cells, empties = list(grid), [i for i, d in enumerate(grid) if not d]

    def recurse() -> bool:
        best, best_free, best_count = -1, 0, n + 1
        for i in empties:
            if not cells[i]:
                r, c, b = u[i]
                free = full & ~(rows[r] | cols[c] | boxes[b])
                if free.bit_count() < best_count:
                    best, best_free, best_count = i, free, free.bit_count()
                    if best_count <= 1:
                        break
        if best < 0:
            found.append(tuple(cells))
            return len(found) >= limit
        r, c, b = u[best]
        for d in (range(1, n + 1) if rng is None else [int(x) + 1 for x in rng.permutation(n)]):
            bit = 1 << d
            if best_free & bit:
                cells[best] = d
                rows[r], cols[c], boxes[b] = rows[r] | bit, cols[c] | bit, boxes[b] | bit
                stop = recurse()
                rows[r], cols[c], boxes[b] = rows[r] & ~bit, cols[c] & ~bit, boxes[b] & ~bit
                cells[best] = 0
                if stop:
                    return True
        return False

    recurse()


def cell_name(cell: int, n: int) -> str:
    """``r<row>c<col>``, 1-based, as the agent writes it."""
    return f"r{cell // n + 1}c{cell % n + 1}"


def render(grid: Grid, n: int) -> str:
    """The board as text: rows and columns numbered, ``.`` for empty cells, boxes separated by bars."""
    b = math.isqrt(n)
    header = "     " + " ".join(f"{c + 1}" + ("  " if (c + 1) % b == 0 and c + 1 < n else "") for c in range(n))
    lines = [header]
    for r in range(n):
        if r and r % b == 0:
            lines.append("     " + "-" * (2 * n - 1 + 2 * (b - 1)))
        cells = []
        for c in range(n):
            d = grid[r * n + c]
            cells.append(("." if not d else str(d)) + (" |" if (c + 1) % b == 0 and c + 1 < n else ""))
        lines.append(f"r{r + 1}   " + " ".join(cells))
    return "\n".join(lines)
