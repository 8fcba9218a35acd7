"""Pure rules of k-ary tree search: a hidden goal leaf, failure feedback at wrong leaves, backtracking.

A node is the path of 1-based child choices from the root (``()`` is the root, ``(2, 1)`` its second
child's first child); leaves sit at depth ``depth``. The only feedback is at leaves: the goal, or a
failure. So the agent must explore systematically and backtrack, which is what the k-ary tree-search
exploration studies measure. The scripted explorer is depth-first search that skips exhausted subtrees;
it uses only what the agent knows (the failed leaves), never the goal, and finds the goal within
``2 * edges`` moves at worst.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

import numpy as np

Node = tuple[int, ...]
BACK = "back"


@dataclass(frozen=True)
class TreePreset:
    """One difficulty: branching factor ``k`` and leaf depth."""

    k: int
    depth: int

    @property
    def leaves(self) -> int:
        return self.k ** self.depth

    @property
    def edges(self) -> int:
        return sum(self.k ** level for level in range(1, self.depth + 1))


PRESETS: dict[str, TreePreset] = {"easy": TreePreset(2, 3), "medium": TreePreset(3, 3), "hard": TreePreset(4, 4)}


def random_leaf(preset: TreePreset, rng: np.random.Generator) -> Node:
    """A uniformly random leaf (the hidden goal)."""
    return tuple(int(c) + 1 for c in rng.integers(preset.k, size=preset.depth))


def is_leaf(node: Node, preset: TreePreset) -> bool:
    return len(node) == preset.depth


def exhausted(node: Node, failed: Collection[Node], preset: TreePreset) -> bool:
    """Whether every leaf below ``node`` is known to have failed."""
    below = sum(1 for leaf in failed if leaf[: len(node)] == node)
    return below == preset.k ** (preset.depth - len(node))


def explorer_action(node: Node, failed: Collection[Node], preset: TreePreset) -> str:
    """Depth-first search: descend into the first child with an untried leaf, else go back up.

    >>> explorer_action((), set(), TreePreset(2, 2)), explorer_action((1, 1), {(1, 1)}, TreePreset(2, 2))
    ('1', 'back')
    """
    if is_leaf(node, preset):
        return BACK
    for child in range(1, preset.k + 1):
        if not exhausted(node + (child,), failed, preset):
            return str(child)
    return BACK


def name(node: Node) -> str:
    """How a node is shown to the agent: ``root`` or its path ``2-1-3``."""
    return "-".join(map(str, node)) if node else "root"
