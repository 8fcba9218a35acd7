"""Tower of Hanoi: move the whole tower to the goal peg, one disk at a time, never a larger disk on a smaller.

Native grammar: ``move disk from A to C``, ``move A to C``, ``A->C``, ``A C`` (pegs A, B, C; any case).
Illegal moves (empty source, larger disk on a smaller one) are invalid actions: the position does not
change. Reward 1.0 when every disk is on the goal peg (won). ``info["score"]`` is 1.0 on a win and otherwise
the fraction of the optimal distance already covered. Valid actions (at most three legal moves) are
listed; ``state_key`` is the position. The start and goal pegs are drawn from the seed.

Difficulty: ``easy`` 3 disks (7 moves at best), ``medium`` 4 (15), ``hard`` 6 (63).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules

_MOVE = re.compile(r"^(?:move\s+)?(?:(?:the\s+)?(?:top\s+)?(?:disk|disc)\s*\d*\s+)?(?:from\s+)?(?:peg\s+)?([abc])\s*"
                   r"(?:->|→|to|,|-)?\s*(?:peg\s+)?([abc])$")


class HanoiEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with one move per turn:': 'Make one move per turn:',
    }
    system_prompt = (
        "You are solving the Tower of Hanoi with pegs A, B and C. Reply with one move per turn: "
        "'move disk from <peg> to <peg>' or '<peg>-><peg>', e.g. 'A->C'. Only the top disk of a peg moves, "
        "and a disk may never be placed on a smaller disk."
    )

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        resolve_difficulty(rules.PRESETS, difficulty, "Hanoi")
        self.difficulty = difficulty.lower()
        self.position: rules.Position = ((), (), ())
        self.goal = 2
        self.moves = 0

    @property
    def disks(self) -> int:
        return rules.PRESETS[self.difficulty].disks

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        start, self.goal = (int(p) for p in self.np_random.choice(3, size=2, replace=False))
        self.position, self.moves = rules.start(self.disks, start), 0
        optimal = 2 ** self.disks - 1
        instruction = (
            f"Move the tower of {self.disks} disks from peg {rules.PEGS[start]} to peg {rules.PEGS[self.goal]}. "
            "Move one disk at a time, always the top disk of a peg, and never put a larger disk on a smaller one. "
            f"Disks are numbered by size (1 is the smallest). The shortest solution takes {optimal} moves."
        )
        observation = f"{instruction}\n{rules.render(self.position)}"
        return observation, {"instruction": instruction, "system_prompt": self.system_prompt,
                             "metrics": {"optimal_moves": float(optimal)}}

    def _step(self, action: str) -> Step:
        match = _MOVE.match(normalise(action))
        if match is None:
            raise InvalidAction(f"Could not read {clip(action)}. Reply 'move disk from A to C' or 'A->C'.")
        source, target = (rules.PEGS.index(g.upper()) for g in match.groups())
        problem = rules.move_problem(self.position, source, target)
        if problem is not None:
            move = f"{rules.PEGS[source]}->{rules.PEGS[target]}"
            raise InvalidAction(f"Illegal move {move}: {problem}.\n{rules.render(self.position)}")
        disk = self.position[source][-1]
        self.position = rules.move(self.position, source, target)
        self.moves += 1
        done = f"Moved disk {disk} from {rules.PEGS[source]} to {rules.PEGS[target]}."
        info = {"metrics": {"moves": float(self.moves)}}
        if rules.is_solved(self.position, self.goal, self.disks):
            return Step(f"{done}\n{rules.render(self.position)}\nSolved in {self.moves} moves!", reward=1.0,
                        terminated=True, won=True, score=1.0, info=info)
        remaining = rules.distance(self.position, self.goal)
        return Step(f"{done}\n{rules.render(self.position)}", score=1.0 - remaining / (2 ** self.disks - 1), info=info)

    def valid_actions(self) -> list[str]:
        return [f"{rules.PEGS[s]}->{rules.PEGS[t]}" for s, t in rules.legal_moves(self.position)]

    def expert_action(self) -> str:
        """The first move of the shortest solution from the current position."""
        source, target = rules.best_move(self.position, self.goal) or (0, 1)  # (0, 1) only once solved
        return f"move disk from {rules.PEGS[source]} to {rules.PEGS[target]}"

    def random_action(self, rng: np.random.Generator) -> str:
        """Uniform over the legal moves."""
        actions = self.valid_actions()
        return actions[int(rng.integers(len(actions)))]

    def state_key_material(self) -> str:
        return f"hanoi|{self.goal}|{self.position}"
