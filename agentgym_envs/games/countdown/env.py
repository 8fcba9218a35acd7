"""Countdown (the numbers round): reach a target number from given numbers with + − × ÷.

Two envs share one puzzle generator (``rules.generate``: every target is reachable):

* :class:`CountdownEnv`, one-shot: the action is one arithmetic expression, e.g. ``(25 + 50) * 4 - 3``
  (an optional ``= 297`` is ignored). It is parsed safely (``expression``): whole numbers, + - * / and
  parentheses only; each given number at most once; every intermediate result a positive integer (no
  fractions, as on TV). An illegal expression is an invalid action (the episode goes on); a legal one ends it.
* :class:`CountdownStepwiseEnv`: each action combines two numbers, ``25 * 4``; the result replaces them.
  ``undo`` takes back the last step. Valid actions (every legal combination) are listed.

Reward 1.0 when the target is reached (won). ``info["score"]`` follows the TV scoring scaled to 1: 1.0
exact, 0.7 within 5, 0.5 within 10, else 0 (for the one-shot answer; for the stepwise game, the closest
number currently held). ``state_key``: the numbers and target (stepwise: the stack of pools, for undo).

Difficulty: ``easy`` 4 numbers, a 2-digit target; ``medium`` 6 numbers (1–2 large), target 101–999;
``hard`` 6 numbers (0–1 large), target 101–999 not reachable in fewer than 3 operations.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules
from .expression import ExpressionError, evaluate

_STEP = re.compile(r"^(\d{1,6})\s*([-+*/x×÷−])\s*(\d{1,6})(?:\s*=\s*\d{0,12})?$")
_OP_ALIASES = {"x": "*", "×": "*", "÷": "/", "−": "-"}


def tv_score(value: int, target: int) -> float:
    """TV points scaled to 1: exact 10 → 1.0, within 5 → 0.7, within 10 → 0.5, else 0."""
    off = abs(value - target)
    return 1.0 if off == 0 else 0.7 if off <= 5 else 0.5 if off <= 10 else 0.0


def expression_for(numbers: rules.Pool, moves: list[rules.Move]) -> str:
    """Fold a sequence of moves into one bracketed expression for the last result."""
    held = [(n, str(n)) for n in numbers]
    for a, op, b in moves:
        ea = held.pop(next(i for i, (v, _) in enumerate(held) if v == a))[1]
        eb = held.pop(next(i for i, (v, _) in enumerate(held) if v == b))[1]
        held.append((rules.apply(a, op, b), f"({ea} {op} {eb})"))
    text = held[-1][1]
    return text[1:-1] if moves else text


class _CountdownBase(TextEnv):
    """Puzzle generation and the instruction shared by both variants."""

    rules_text = ("Combine the numbers with + - * / to reach the target. Each number may be used at most once and "
                  "not all need be used; every intermediate result must be a positive whole number.")

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        resolve_difficulty(rules.PRESETS, difficulty, "Countdown")
        self.difficulty = difficulty.lower()
        self.numbers: rules.Pool = ()
        self.target = 0

    def _new_puzzle(self) -> str:
        self.numbers, self.target = rules.generate(rules.PRESETS[self.difficulty], self.np_random)
        return f"Numbers: {' '.join(map(str, self.numbers))}. Target: {self.target}."


class CountdownEnv(_CountdownBase):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Reply with one arithmetic expression': 'Your action is one arithmetic expression',
        'Answer with a single expression; you have one answer.':
            'You have one answer: a single expression.',
    }
    system_prompt = (
        "You are playing the Countdown numbers game. Reply with one arithmetic expression that uses the given "
        "numbers (each at most once) with + - * / and parentheses to hit the target, e.g. '(25 + 50) * 4 - 3'."
    )

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        instruction = f"{self._new_puzzle()} {self.rules_text} Answer with a single expression; you have one answer."
        return instruction, {"instruction": instruction, "system_prompt": self.system_prompt}

    def _step(self, action: str) -> Step:
        try:
            value, _ = evaluate(action, self.numbers)
        except ExpressionError as e:
            raise InvalidAction(f"Invalid expression {clip(action)}: {e}.") from None
        score = tv_score(value, self.target)
        if value == self.target:
            return Step(f"{action.strip()[:200]} = {value}. Exactly {self.target}!", reward=1.0, terminated=True,
                        won=True, score=score)
        return Step(f"{action.strip()[:200]} = {value}, {abs(value - self.target)} away from {self.target}.",
                    terminated=True, won=False, score=score)

    def expert_action(self) -> str:
        """A solution found by iterative-deepening search, written as one expression."""
        return expression_for(self.numbers, rules.solve(self.numbers, self.target) or [])

    def random_action(self, rng: np.random.Generator) -> str:
        """A random legal expression: random legal steps, of random length, folded into one expression."""
        pool, moves = self.numbers, []
        for _ in range(int(rng.integers(1, len(self.numbers)))):
            options = list(rules.moves(pool))
            move, _ = options[int(rng.integers(len(options)))]
            moves.append(move)
            pool = rules.play(pool, move)
        return expression_for(self.numbers, moves)

    def state_key_material(self) -> str:
        return f"countdown|{self.numbers}|{self.target}"


class CountdownStepwiseEnv(_CountdownBase):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn reply with one action:': 'Each turn, take one action:',
    }
    system_prompt = (
        "You are playing the Countdown numbers game one step at a time. Each turn reply with one action: two of "
        "your numbers and an operator, e.g. '25 * 4' (the result replaces them), or 'undo' to take a step back."
    )

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(difficulty, render_mode=render_mode)
        self.pool: rules.Pool = ()
        self.stack: list[rules.Pool] = []

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        puzzle = self._new_puzzle()
        self.pool, self.stack = self.numbers, []
        instruction = (f"{puzzle} {self.rules_text} Each step combines two of your numbers, e.g. '25 * 4'; "
                       "'undo' takes a step back.")
        return instruction, {"instruction": instruction, "system_prompt": self.system_prompt}

    def _step(self, action: str) -> Step:
        text = normalise(action)
        if text == "undo":
            if not self.stack:
                raise InvalidAction("Nothing to undo: you are at the start.")
            self.pool = self.stack.pop()
            return self._status("Undone.")
        move = self._parse(text, action)
        after = rules.play(self.pool, move)
        if after is None:
            raise InvalidAction(self._why_illegal(move))
        self.stack.append(self.pool)
        self.pool = after
        result = rules.apply(*move)
        if result == self.target:
            return Step(f"{rules.format_move(move)} = {result}. Target {self.target} reached!", reward=1.0,
                        terminated=True, won=True, score=1.0, info={"metrics": {"steps": float(len(self.stack))}})
        return self._status(f"{rules.format_move(move)} = {result}.")

    def _parse(self, text: str, action: str) -> rules.Move:
        match = _STEP.match(text)
        if match is None:
            raise InvalidAction(f"Could not read {clip(action)}. Reply '<number> <op> <number>' with op one of "
                                "+ - * /, e.g. '25 * 4', or 'undo'.")
        a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
        return a, _OP_ALIASES.get(op, op), b

    def _why_illegal(self, move: rules.Move) -> str:
        a, op, b = move
        if rules.remove_pair(self.pool, a, b) is None:
            return f"You do not hold {a} and {b} (your numbers: {' '.join(map(str, self.pool))})."
        why = "is not a whole number" if op == "/" else "is not positive"
        return f"{a} {op} {b} {why}; every result must be a positive whole number."

    def _status(self, done: str) -> Step:
        closest = min(self.pool, key=lambda v: (abs(v - self.target), v))
        held = " ".join(map(str, self.pool))
        hint = " No moves left: 'undo' to go back." if len(self.pool) == 1 else ""
        return Step(f"{done} Your numbers: {held}. Target: {self.target}.{hint}", score=tv_score(closest, self.target),
                    info={"metrics": {"steps": float(len(self.stack))}})

    def valid_actions(self) -> list[str]:
        actions = [rules.format_move(move) for move, _ in rules.moves(self.pool)]
        return actions + (["undo"] if self.stack else [])

    def expert_action(self) -> str:
        """The next step of a shortest solution from the current numbers, or ``undo`` when none exists."""
        plan = rules.solve(self.pool, self.target)
        return rules.format_move(plan[0]) if plan else "undo"

    def random_action(self, rng: np.random.Generator) -> str:
        """Uniform over the valid actions (legal steps and undo)."""
        actions = self.valid_actions()
        return actions[int(rng.integers(len(actions)))]

    def state_key_material(self) -> str:
        return f"countdown-stepwise|{self.target}|" + "/".join(map(str, [*self.stack, self.pool]))
