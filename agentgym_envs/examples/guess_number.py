"""GuessNumber: the SDK's tool-env example. Find a secret integer with ``guess(number)``.

Tools: ``guess(number: int)`` answers "higher"/"lower"/"correct"; ``give_up()`` ends the episode.
Reward 1.0 for finding the number; out-of-range guesses are invalid actions. The expert bisects.
"""

from __future__ import annotations

from typing import Any

from ..core import InvalidAction, Step, ToolEnv, tool


class GuessNumberEnv(ToolEnv):
    system_prompt = "Find the secret number. Call guess(number=<int>) each turn; use the feedback to narrow it down."

    def __init__(self, high: int = 100, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if high < 2:
            raise ValueError(f"high must be at least 2, got {high}")
        self.high = high
        self.secret = 1
        self.low_bound, self.high_bound = 1, high
        self.guesses = 0

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.secret = int(self.np_random.integers(1, self.high + 1))
        self.low_bound, self.high_bound, self.guesses = 1, self.high, 0
        instruction = f"I am thinking of an integer between 1 and {self.high}. Find it."
        return instruction, {"instruction": instruction}

    @tool
    def guess(self, number: int) -> Step:
        """Guess the secret number.

        Args:
            number: your guess, an integer in the announced range.
        """
        if not 1 <= number <= self.high:
            raise InvalidAction(f"{number} is outside the range 1..{self.high}.")
        self.guesses += 1
        metrics = {"guesses": float(self.guesses)}
        if number == self.secret:
            return Step(f"{number} is correct!", reward=1.0, terminated=True, won=True, score=1.0, info={"metrics": metrics})
        if number < self.secret:
            self.low_bound = max(self.low_bound, number + 1)
            return Step(f"{number} is too low; the number is higher.", info={"metrics": metrics})
        self.high_bound = min(self.high_bound, number - 1)
        return Step(f"{number} is too high; the number is lower.", info={"metrics": metrics})

    @tool
    def give_up(self) -> Step:
        """Give up and end the episode."""
        return Step(f"You gave up. The number was {self.secret}.", terminated=True, won=False, score=0.0)

    def expert_action(self) -> str:
        return f"guess(number={(self.low_bound + self.high_bound) // 2})"

    def state_key_material(self) -> str:
        return f"{self.high}|{self.low_bound}|{self.high_bound}"
