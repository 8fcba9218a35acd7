"""Wordle: find a secret five-letter word in six guesses from green/yellow/gray feedback.

Native grammar: ``guess <word>`` or the bare word (``crane``, ``CRANE``). A guess must be a word of the
game's dictionary (``words.WORDS``); other words, wrong lengths and, in hard mode, guesses that ignore a
revealed hint are invalid actions (reward 0, no guess used). Reward 1.0 when the word is found (won);
running out of guesses ends the episode (lost). ``info["score"]`` is 1.0 on a win, 0.0 otherwise.
``state_key`` is the list of guesses and their feedback, which is everything the agent knows.

Difficulty (``difficulty=`` kwarg): ``easy`` draws the secret from ~100 everyday words, ``medium`` from the
whole ~500-word dictionary, ``hard`` adds hard mode.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules
from .words import WORDS

_DICTIONARY = frozenset(WORDS)
_GUESS = re.compile(r"^(?:guess\s*:?\s*)?([a-z]+)$")


class WordleEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        "Reply with one action: 'guess <word>'": "An action is 'guess <word>'",
        "Reply 'guess <word>'.": '',
    }
    system_prompt = (
        "You are playing Wordle. Reply with one action: 'guess <word>' where <word> is a common five-letter "
        "English word, e.g. 'guess crane'. Feedback marks each letter G (right place), Y (in the word, "
        "elsewhere) or . (not in the word, or no further copies)."
    )

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        resolve_difficulty(rules.PRESETS, difficulty, "Wordle")  # fail fast on an unknown name
        self.difficulty = difficulty.lower()
        self.secret = ""
        self.history: list[tuple[str, str]] = []

    @property
    def preset(self) -> rules.WordlePreset:
        return rules.PRESETS[self.difficulty]

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        answers = self.preset.answers
        self.secret = answers[int(self.np_random.integers(len(answers)))]
        self.history = []
        hard = (" Hard mode is on: every revealed hint must be used in later guesses (green letters stay "
                "in place, yellow letters must appear).") if self.preset.hard_mode else ""
        instruction = (
            f"Guess the secret five-letter English word in {self.preset.max_guesses} guesses. After each guess "
            "every letter is marked G (right letter, right place), Y (in the word but elsewhere) or . (not in "
            f"the word, or no unmatched copy left). Guesses must be common English words.{hard}"
        )
        return f"{instruction}\nReply 'guess <word>'.", {"instruction": instruction, "system_prompt": self.system_prompt}

    def _step(self, action: str) -> Step:
        guess = self._parse(action)
        marks = rules.feedback(guess, self.secret)
        self.history.append((guess, marks))
        used = len(self.history)
        info = {"metrics": {"guesses": float(used)}}
        board = self._board()
        if marks == rules.GREEN * rules.WORD_LENGTH:
            return Step(f"{board}\nSolved in {used} guess{'es' if used > 1 else ''}!", reward=1.0,
                        terminated=True, won=True, score=1.0, info=info)
        if used >= self.preset.max_guesses:
            return Step(f"{board}\nOut of guesses. The word was {self.secret.upper()}.", terminated=True,
                        won=False, score=0.0, info=info)
        left = self.preset.max_guesses - used
        return Step(f"{board}\n{left} guess{'es' if left > 1 else ''} left.", info=info)

    def _parse(self, action: str) -> str:
        match = _GUESS.match(normalise(action))
        if match is None:
            raise InvalidAction(f"Could not read {clip(action)} as a guess; no guess was used. Reply 'guess <word>', "
                                "e.g. 'guess crane'.")
        word = match.group(1)
        if len(word) != rules.WORD_LENGTH:
            raise InvalidAction(f"Guesses have 5 letters; {word[:20].upper()!r} has {len(word)}. No guess was used.")
        if word not in _DICTIONARY:
            raise InvalidAction(f"{word.upper()} is not in the game's word list. No guess was used; try another word.")
        if self.preset.hard_mode:
            problem = rules.hard_mode_violation(word, self.history)
            if problem:
                raise InvalidAction(f"{word.upper()} is not allowed: {problem}. No guess was used.")
        return word

    def _board(self) -> str:
        return "\n".join(f"{i}. {g.upper()}  {' '.join(m)}" for i, (g, m) in enumerate(self.history, 1))

    def expert_action(self) -> str:
        """Minimax over the words still consistent with the feedback (solves every secret in ≤ 5 guesses)."""
        return f"guess {rules.solver_guess(self.preset.answers, tuple(self.history))}"

    def random_action(self, rng: np.random.Generator) -> str:
        """A uniformly random legal guess: any dictionary word (that respects the hints in hard mode)."""
        pool = WORDS
        if self.preset.hard_mode and self.history:
            pool = tuple(w for w in WORDS if rules.hard_mode_violation(w, self.history) is None)
        return f"guess {pool[int(rng.integers(len(pool)))]}"

    def state_key_material(self) -> str:
        return f"wordle|{self.difficulty}|" + ",".join(f"{g}:{m}" for g, m in self.history)
