"""Pure Tower of Hanoi rules: pegs, legal moves, and the optimal solver from any position.

A position is a tuple of three pegs, each a tuple of disk sizes from bottom to top (``1`` is the smallest).
A move takes the top disk of one peg to another peg whose top disk (if any) is larger. The optimal solver
works from *any* legal position (not only the start), so the expert recovers after the agent's detours.
"""

from __future__ import annotations

from dataclasses import dataclass

PEGS = "ABC"
Position = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]


@dataclass(frozen=True)
class HanoiPreset:
    """One difficulty: the number of disks (the optimal solution takes ``2**disks - 1`` moves)."""

    disks: int


PRESETS: dict[str, HanoiPreset] = {"easy": HanoiPreset(3), "medium": HanoiPreset(4), "hard": HanoiPreset(6)}


def start(disks: int, peg: int) -> Position:
    """All ``disks`` stacked on ``peg``."""
    stack = tuple(range(disks, 0, -1))
    return tuple(stack if i == peg else () for i in range(3))  # type: ignore[return-value]


def move_problem(position: Position, source: int, target: int) -> str | None:
    """Why moving the top disk from ``source`` to ``target`` is illegal, or ``None`` when it is legal."""
    if source == target:
        return f"the source and target pegs are both {PEGS[source]}"
    if not position[source]:
        return f"peg {PEGS[source]} is empty"
    disk = position[source][-1]
    if position[target] and position[target][-1] < disk:
        return f"disk {disk} cannot go on top of the smaller disk {position[target][-1]} on peg {PEGS[target]}"
    return None


def move(position: Position, source: int, target: int) -> Position:
    """The position after a legal move (raises ``ValueError`` on an illegal one: callers check first)."""
    problem = move_problem(position, source, target)
    if problem is not None:
        raise ValueError(problem)
    pegs = [list(p) for p in position]
    pegs[target].append(pegs[source].pop())
    return tuple(tuple(p) for p in pegs)  # type: ignore[return-value]


def legal_moves(position: Position) -> list[tuple[int, int]]:
    """Every legal ``(source, target)`` pair, in peg order."""
    return [(s, t) for s in range(3) for t in range(3) if move_problem(position, s, t) is None]


def is_solved(position: Position, goal: int, disks: int) -> bool:
    return len(position[goal]) == disks


def best_move(position: Position, goal: int) -> tuple[int, int] | None:
    """The first move of the shortest solution from ``position`` to all disks on ``goal`` (``None`` if solved).

    The largest disk not on its target peg must move exactly once, after every smaller disk has gathered
    on the third peg; recursing on that sub-goal gives the first move.
    """
    where = {disk: peg for peg, stack in enumerate(position) for disk in stack}
    return _first_move(where, len(where), goal)


def _first_move(where: dict[int, int], disk: int, target: int) -> tuple[int, int] | None:
    """First move of gathering disks ``1..disk`` on ``target``, or ``None`` when they are all there."""
    for d in range(disk, 0, -1):
        if where[d] != target:
            spare = 3 - where[d] - target
            return _first_move(where, d - 1, spare) or (where[d], target)
    return None


def distance(position: Position, goal: int) -> int:
    """Number of moves of the optimal solution from ``position`` to all disks on ``goal``."""
    where = {disk: peg for peg, stack in enumerate(position) for disk in stack}
    total, target = 0, goal
    for disk in sorted(where, reverse=True):
        if where[disk] != target:
            total += 1 << (disk - 1)
            target = 3 - where[disk] - target
    return total


def render(position: Position) -> str:
    """One line per peg, bottom to top: ``A: 4 3 2 1``."""
    return "\n".join(f"{PEGS[i]}: {' '.join(map(str, stack)) or '(empty)'}" for i, stack in enumerate(position))
