"""Mastermind: break a secret code of digits ("colours") from black/white peg feedback.

Native grammar: ``guess 1234`` or the bare code (``1234``, ``1 2 3 4``, ``1,2,3,4``). Each guess scores
``black`` (right digit, right place) and ``white`` (right digit, wrong place) pegs. Malformed codes are
invalid actions (no guess used). Reward 1.0 on cracking the code (won); running out of guesses ends the
episode (lost). ``info["score"]`` is 1.0 on a win, else 0.0. ``state_key`` is the guess/peg history.

Difficulty: ``easy`` 3 digits from 1–4 (8 guesses), ``medium`` 4 digits from 1–6 (10, the classic game),
``hard`` 5 digits from 1–8 (12).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules

_PREFIX = re.compile(r"^guess\s*:?\s*")


class MastermindEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        "Reply with one action: 'guess <code>',": "An action is 'guess <code>',",
        "Reply 'guess <code>', e.g.": "Example:",
    }
    system_prompt = (
        "You are playing Mastermind, breaking a secret code of digits. Reply with one action: 'guess <code>', "
        "e.g. 'guess 1234'. Feedback gives black pegs (right digit, right place) and white pegs (right digit, "
        "wrong place)."
    )

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        resolve_difficulty(rules.PRESETS, difficulty, "Mastermind")
        self.difficulty = difficulty.lower()
        self.secret: rules.Code = ()
        self.history: list[tuple[rules.Code, tuple[int, int]]] = []

    @property
    def preset(self) -> rules.MastermindPreset:
        return rules.PRESETS[self.difficulty]

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        p = self.preset
        self.secret = tuple(int(d) for d in self.np_random.integers(1, p.colours + 1, size=p.length))
        self.history = []
        example = "".join(str(1 + i % p.colours) for i in range(p.length))
        instruction = (
            f"Break the secret code: {p.length} digits, each from 1 to {p.colours} (digits may repeat). You have "
            f"{p.max_guesses} guesses. Each guess is scored with black pegs (right digit in the right place) and "
            f"white pegs (right digit in the wrong place)."
        )
        prompt = f"{self.system_prompt} Codes here have {p.length} digits from 1 to {p.colours}, e.g. 'guess {example}'."
        observation = f"{instruction}\nReply 'guess <code>', e.g. 'guess {example}'."
        return observation, {"instruction": instruction, "system_prompt": prompt}

    def _step(self, action: str) -> Step:
        p = self.preset
        code = rules.parse_code(_PREFIX.sub("", normalise(action)), p.length, p.colours)
        if isinstance(code, str):
            raise InvalidAction(f"Could not read {clip(action)} as a guess: {code}. No guess was used.")
        pegs = rules.score(code, self.secret)
        self.history.append((code, pegs))
        used = len(self.history)
        info = {"metrics": {"guesses": float(used)}}
        board = self._board()
        if pegs[0] == p.length:
            return Step(f"{board}\nCracked in {used} guess{'es' if used > 1 else ''}!", reward=1.0, terminated=True,
                        won=True, score=1.0, info=info)
        if used >= p.max_guesses:
            secret = "".join(map(str, self.secret))
            return Step(f"{board}\nOut of guesses. The code was {secret}.", terminated=True, won=False, score=0.0, info=info)
        return Step(f"{board}\n{p.max_guesses - used} guesses left.", info=info)

    def _board(self) -> str:
        return "\n".join(f"{i}. {''.join(map(str, code))}  black {b}, white {w}"
                         for i, (code, (b, w)) in enumerate(self.history, 1))

    def expert_action(self) -> str:
        """Always a code consistent with the feedback; minimax when few remain (see ``rules.solver_guess``)."""
        p = self.preset
        return "guess " + "".join(map(str, rules.solver_guess(tuple(self.history), p.length, p.colours)))

    def random_action(self, rng: np.random.Generator) -> str:
        """A uniformly random code."""
        p = self.preset
        return "guess " + "".join(str(int(d)) for d in rng.integers(1, p.colours + 1, size=p.length))

    def state_key_material(self) -> str:
        return f"mastermind|{self.difficulty}|" + ",".join(f"{''.join(map(str, c))}:{b}{w}" for c, (b, w) in self.history)
