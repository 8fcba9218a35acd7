"""k-ary tree search: find the hidden goal leaf; wrong leaves only say "failure", so you must backtrack.

Native grammar: a child number (``2``, ``go 2``, ``choose 2``, ``child 2``) to descend, and ``back`` (also
``up``, ``backtrack``) to return to the parent. Descending from a leaf or going back from the root are
invalid actions. Reaching a leaf that is not the goal gives failure feedback, and the agent must go back.
Reward 1.0 on reaching the goal leaf (won). ``info["score"]`` is 1.0 on a win, else 0.0. Valid actions are
listed. ``state_key`` is the current node plus the set of leaves known to have failed, which is what the
agent knows. The scripted expert is depth-first search over what the agent knows (it never peeks at the
goal), so expert data shows systematic exploration with backtracking.

Difficulty: ``easy`` k=2, depth 3 (8 leaves); ``medium`` k=3, depth 3 (27); ``hard`` k=4, depth 4 (256).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules

_CHILD = re.compile(r"^(?:go(?:\s+to)?|choose|pick|child|descend(?:\s+to)?|take)?\s*(?:child\s*)?(\d{1,3})$")
_BACK_WORDS = frozenset({"back", "up", "backtrack", "go back", "go up", "parent", "return"})


class TreeSearchEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn reply with one action:': 'Each turn, take one action:',
    }
    system_prompt = (
        "You are searching a tree for a hidden goal leaf. Each turn reply with one action: a child number to "
        "descend (e.g. '2') or 'back' to return to the parent. Wrong leaves report failure; backtrack and "
        "explore elsewhere. Remember which leaves you have already tried."
    )

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        resolve_difficulty(rules.PRESETS, difficulty, "TreeSearch")
        self.difficulty = difficulty.lower()
        self.goal: rules.Node = ()
        self.node: rules.Node = ()
        self.failed: frozenset[rules.Node] = frozenset()

    @property
    def preset(self) -> rules.TreePreset:
        return rules.PRESETS[self.difficulty]

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        p = self.preset
        self.goal = rules.random_leaf(p, self.np_random)
        self.node, self.failed = (), frozenset()
        instruction = (
            f"A tree has branching factor {p.k} and depth {p.depth} ({p.leaves} leaves). One leaf is the goal. "
            f"Start at the root; choose a child (1 to {p.k}) to descend, or 'back' to go up. Only leaves give "
            "feedback: the goal, or failure."
        )
        return f"{instruction}\n{self._where()}", {"instruction": instruction, "system_prompt": self.system_prompt}

    def _step(self, action: str) -> Step:
        text = normalise(action)
        p = self.preset
        if text in _BACK_WORDS:
            if not self.node:
                raise InvalidAction("You are at the root; there is no parent. Choose a child 1 to "
                                    f"{p.k}.")
            self.node = self.node[:-1]
            return Step(f"You go back up. {self._where()}")
        match = _CHILD.match(text)
        if match is None:
            raise InvalidAction(f"Could not read {clip(action)}. Reply a child number (1 to {p.k}) or 'back'.")
        if rules.is_leaf(self.node, p):
            raise InvalidAction(f"Leaf {rules.name(self.node)} has no children; reply 'back'.")
        child = int(match.group(1))
        if not 1 <= child <= p.k:
            raise InvalidAction(f"Children are numbered 1 to {p.k}; got {child}.")
        self.node = self.node + (child,)
        info = {"metrics": {"leaves_tried": float(len(self.failed) + rules.is_leaf(self.node, p))}}
        if self.node == self.goal:
            return Step(f"Leaf {rules.name(self.node)} is the goal. Success!", reward=1.0, terminated=True,
                        won=True, score=1.0, info=info)
        if rules.is_leaf(self.node, p):
            self.failed = self.failed | {self.node}
            return Step(f"Leaf {rules.name(self.node)}: failure, this is not the goal. Reply 'back'.", info=info)
        return Step(f"You descend to child {child}. {self._where()}", info=info)

    def _where(self) -> str:
        depth = len(self.node)
        return f"You are at node {rules.name(self.node)} (depth {depth} of {self.preset.depth}). {self._options()}"

    def _options(self) -> str:
        return "Actions: " + ", ".join(self.valid_actions()) + "."

    def valid_actions(self) -> list[str]:
        children = [] if rules.is_leaf(self.node, self.preset) else [str(c) for c in range(1, self.preset.k + 1)]
        return children + ([rules.BACK] if self.node else [])

    def expert_action(self) -> str:
        """Depth-first search that skips subtrees whose leaves all failed (never looks at the goal)."""
        return rules.explorer_action(self.node, self.failed, self.preset)

    def random_action(self, rng: np.random.Generator) -> str:
        """Uniform over the valid actions: a random walk on the tree."""
        actions = self.valid_actions()
        return actions[int(rng.integers(len(actions)))]

    def state_key_material(self) -> str:
        failed = ",".join(rules.name(leaf) for leaf in sorted(self.failed))
        return f"tree|{self.difficulty}|{rules.name(self.node)}|{failed}"
