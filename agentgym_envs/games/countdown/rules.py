"""Pure Countdown rules (the numbers round): moves, a solver, and seeded solvable puzzles.

The TV rules: combine the given numbers with + − × ÷ to reach the target; each number is used at most once;
every intermediate result must be a positive integer (so no fractions, no zero, no negatives). Not every
number has to be used. A *move* combines two numbers of the pool into their result, which joins the pool;
both the stepwise game and the solver work on moves, and a one-shot expression is a tree of moves.

Puzzles are built backwards from a random sequence of moves, so every target is reachable.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

import numpy as np

Pool = tuple[int, ...]  # a multiset of numbers, kept sorted
Move = tuple[int, str, int]  # (a, op, b) meaning "a op b"

SMALL = tuple(range(1, 11)) * 2
LARGE = (25, 50, 75, 100)
OPS = ("+", "-", "*", "/")


@dataclass(frozen=True)
class CountdownPreset:
    """One difficulty: how many numbers (and how many large ones), the target range, the fewest moves."""

    numbers: int
    large: tuple[int, int]  # inclusive range of how many large numbers are drawn
    target: tuple[int, int]  # inclusive target range
    min_moves: int = 1  # the target is not reachable in fewer moves


PRESETS: dict[str, CountdownPreset] = {
    "easy": CountdownPreset(numbers=4, large=(0, 1), target=(10, 99), min_moves=2),
    "medium": CountdownPreset(numbers=6, large=(1, 2), target=(101, 999), min_moves=2),
    "hard": CountdownPreset(numbers=6, large=(0, 1), target=(101, 999), min_moves=3),
}


def apply(a: int, op: str, b: int) -> int | None:
    """``a op b`` when it is a positive integer (the TV rule), else ``None``.

    >>> apply(25, "*", 4), apply(7, "/", 2), apply(3, "-", 5)
    (100, None, None)
    """
    if op == "+":
        return a + b
    if op == "*":
        return a * b
    if op == "-":
        return a - b if a > b else None
    if op == "/":
        return a // b if b and a % b == 0 else None
    raise ValueError(f"op must be one of {OPS}, got {op!r}")


def remove_pair(pool: Pool, a: int, b: int) -> Pool | None:
    """``pool`` without one ``a`` and one ``b``, or ``None`` when the pool does not hold them."""
    rest = list(pool)
    for x in (a, b):
        if x not in rest:
            return None
        rest.remove(x)
    return tuple(rest)


def play(pool: Pool, move: Move) -> Pool | None:
    """The pool after ``move`` (sorted), or ``None`` when the move is not legal."""
    a, op, b = move
    rest = remove_pair(pool, a, b)
    result = apply(a, op, b) if rest is not None else None
    return None if result is None else tuple(sorted((*rest, result)))


def moves(pool: Pool) -> Iterator[tuple[Move, int]]:
    """Every legal move on ``pool`` with its result, once per distinct move (larger operand first)."""
    seen: set[Move] = set()
    for i in range(len(pool)):
        for j in range(len(pool)):
            a, b = pool[i], pool[j]
            if i == j or a < b or (a == b and i > j):
                continue
            for op in OPS:
                result = apply(a, op, b)
                if result is not None and (a, op, b) not in seen:
                    seen.add((a, op, b))
                    yield (a, op, b), result


def solve(pool: Pool, target: int) -> list[Move] | None:
    """A shortest-first-found sequence of moves reaching ``target`` from ``pool``, or ``None``.

    Iterative deepening keeps solutions short (the expert's moves are easy to follow); a memo of pools that
    already failed at a depth prunes the search.
    """
    pool = tuple(sorted(pool))
    if target in pool:
        return []
    for depth in range(1, len(pool)):
        found = _solve(pool, target, depth)
        if found is not None:
            return list(found)
    return None


@lru_cache(maxsize=50_000)
def _solve(pool: Pool, target: int, depth: int) -> tuple[Move, ...] | None:
    for move, result in moves(pool):
        if result == target:
            return (move,)
        if depth > 1:
            rest = _solve(play(pool, move), target, depth - 1)
            if rest is not None:
                return (move, *rest)
    return None


def reachable(pool: Pool, max_moves: int) -> set[int]:
    """Every number reachable from ``pool`` in at most ``max_moves`` moves (the pool itself included)."""
    frontier, seen = {tuple(sorted(pool))}, set(pool)
    for _ in range(max_moves):
        nxt = set()
        for p in frontier:
            for move, result in moves(p):
                seen.add(result)
                nxt.add(play(p, move))
        frontier = nxt
    return seen


def draw_numbers(preset: CountdownPreset, rng: np.random.Generator) -> Pool:
    """The numbers of a round: ``large`` numbers from {25, 50, 75, 100}, the rest from two sets of 1–10."""
    n_large = int(rng.integers(preset.large[0], preset.large[1] + 1))
    large = [LARGE[int(i)] for i in rng.choice(len(LARGE), size=n_large, replace=False)]
    small = [SMALL[int(i)] for i in rng.choice(len(SMALL), size=preset.numbers - n_large, replace=False)]
    return tuple(sorted(large + small))


def generate(preset: CountdownPreset, rng: np.random.Generator, max_tries: int = 500) -> tuple[Pool, int]:
    """A ``(numbers, target)`` puzzle whose target is reachable, in range, and needs ≥ ``min_moves`` moves."""
    low, high = preset.target
    for _ in range(max_tries):
        pool = draw_numbers(preset, rng)
        walk = _random_walk(pool, rng)
        targets = sorted({t for t in walk if low <= t <= high and t not in pool})
        if preset.min_moves > 1 and targets:
            too_easy = reachable(pool, preset.min_moves - 1)
            targets = [t for t in targets if t not in too_easy]
        if targets:
            return pool, targets[int(rng.integers(len(targets)))]
    raise RuntimeError(f"no puzzle found in {max_tries} tries for {preset}")


def _random_walk(pool: Pool, rng: np.random.Generator) -> list[int]:
    """Results of random legal moves played from ``pool`` until one number is left."""
    results = []
    while len(pool) > 1:
        options = list(moves(pool))
        move, result = options[int(rng.integers(len(options)))]
        results.append(result)
        pool = play(pool, move)
    return results


def format_move(move: Move) -> str:
    a, op, b = move
    return f"{a} {op} {b}"
