"""Pure maze rules: generation of a perfect maze from a generator, moves, and shortest paths."""

from __future__ import annotations

from collections import deque

import numpy as np

Cell = tuple[int, int]  # (row, col)
DIRECTIONS: dict[str, tuple[int, int]] = {"north": (-1, 0), "south": (1, 0), "east": (0, 1), "west": (0, -1)}


class Maze:
    """A ``size × size`` grid of rooms; ``passages[cell]`` holds the directions that are open."""

    def __init__(self, size: int, passages: dict[Cell, set[str]]):
        self.size = size
        self.passages = passages

    @classmethod
    def generate(cls, size: int, rng: np.random.Generator) -> "Maze":
        """Randomised depth-first carving: every room reachable, exactly one path between two rooms."""
        passages: dict[Cell, set[str]] = {(r, c): set() for r in range(size) for c in range(size)}
        start = (int(rng.integers(size)), int(rng.integers(size)))
        stack, seen = [start], {start}
        while stack:
            r, c = stack[-1]
            options = [
                (name, (r + dr, c + dc))
                for name, (dr, dc) in DIRECTIONS.items()
                if 0 <= r + dr < size and 0 <= c + dc < size and (r + dr, c + dc) not in seen
            ]
            if not options:
                stack.pop()
                continue
            name, nxt = options[int(rng.integers(len(options)))]
            passages[(r, c)].add(name)
            passages[nxt].add(OPPOSITE[name])
            seen.add(nxt)
            stack.append(nxt)
        return cls(size, passages)

    def exits(self, cell: Cell) -> list[str]:
        return [d for d in DIRECTIONS if d in self.passages[cell]]

    def move(self, cell: Cell, direction: str) -> Cell | None:
        """The room reached by going ``direction`` from ``cell``, or ``None`` if a wall is in the way."""
        if direction not in self.passages[cell]:
            return None
        dr, dc = DIRECTIONS[direction]
        return cell[0] + dr, cell[1] + dc

    def distances(self, source: Cell) -> dict[Cell, int]:
        dist = {source: 0}
        queue = deque([source])
        while queue:
            cell = queue.popleft()
            for direction in self.exits(cell):
                nxt = self.move(cell, direction)
                if nxt is not None and nxt not in dist:
                    dist[nxt] = dist[cell] + 1
                    queue.append(nxt)
        return dist

    def next_step(self, cell: Cell, goal: Cell) -> str:
        """The first move of a shortest path from ``cell`` to ``goal``."""
        to_goal = self.distances(goal)
        return min(self.exits(cell), key=lambda d: to_goal[self.move(cell, d)])


OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
