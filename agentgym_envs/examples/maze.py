"""Maze: the SDK's reference env. Find the exit of a maze from local views.

Native grammar: ``go <north|south|east|west>`` (also ``north``, ``n``, ``move north``), and ``look``.
Reward 1.0 on reaching the exit (terminated, won); walls and unknown commands are invalid actions
(reward 0, the episode goes on). ``state_key`` is the room, which is what the agent's view identifies.
"""

from __future__ import annotations

import re
from typing import Any

from ..core import InvalidAction, Step, TextEnv
from .maze_rules import DIRECTIONS, Maze

_ALIASES = {d[0]: d for d in DIRECTIONS} | {d: d for d in DIRECTIONS} | {"up": "north", "down": "south", "left": "west", "right": "east"}
_COMMAND = re.compile(r"^(?:go|move|walk)?\s*(?:to\s+(?:the\s+)?)?([a-z]+)[.!]?$")


class MazeEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn reply with one command:': 'Each turn, your action is one command:',
    }
    system_prompt = (
        "You are exploring a maze of rooms. Each turn reply with one command: "
        "'go north', 'go south', 'go east', 'go west' or 'look'. Reach the exit."
    )

    def __init__(self, size: int = 6, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if not 2 <= size <= 50:
            raise ValueError(f"size must be between 2 and 50, got {size}")
        self.size = size
        self.maze: Maze | None = None
        self.position = (0, 0)
        self.goal = (0, 0)
        self.moves = 0

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.maze = Maze.generate(self.size, self.np_random)
        self.position = (int(self.np_random.integers(self.size)), int(self.np_random.integers(self.size)))
        distances = self.maze.distances(self.position)
        farthest = max(distances.values())
        candidates = sorted(cell for cell, d in distances.items() if d >= max(1, farthest * 2 // 3))
        self.goal = candidates[int(self.np_random.integers(len(candidates)))]
        self.moves = 0
        instruction = f"Find the exit of a {self.size}×{self.size} maze."
        return f"{instruction} {self._describe()}", {"instruction": instruction, "metrics": {"optimal_steps": distances[self.goal]}}

    def _step(self, action: str) -> Step:
        command = action.lower()
        if command in ("look", "l"):
            return Step(self._describe())
        match = _COMMAND.match(command)
        direction = _ALIASES.get(match.group(1)) if match else None
        if direction is None:
            raise InvalidAction(f"Unknown command {action[:80]!r}. Valid actions: {', '.join(self.valid_actions())}.")
        nxt = self.maze.move(self.position, direction)
        if nxt is None:
            raise InvalidAction(f"You cannot go {direction}: there is a wall. {self._describe()}")
        self.position, self.moves = nxt, self.moves + 1
        if self.position == self.goal:
            return Step(f"You go {direction} and find the exit. You escaped the maze!", reward=1.0, terminated=True, won=True, score=1.0)
        return Step(f"You go {direction}. {self._describe()}")

    def valid_actions(self) -> list[str]:
        return [f"go {d}" for d in self.maze.exits(self.position)] + ["look"] if self.maze else ["look"]

    def expert_action(self) -> str:
        return f"go {self.maze.next_step(self.position, self.goal)}"

    def state_key_material(self) -> str:
        return f"{self.instruction}|{self.position}|{self.goal}"

    def _describe(self) -> str:
        dr, dc = self.goal[0] - self.position[0], self.goal[1] - self.position[1]
        parts = [f"{abs(dr)} south" if dr > 0 else f"{-dr} north" if dr < 0 else "",
                 f"{abs(dc)} east" if dc > 0 else f"{-dc} west" if dc < 0 else ""]
        where = " and ".join(p for p in parts if p)
        return f"Exits: {', '.join(self.maze.exits(self.position))}. The exit is {where} of you."
