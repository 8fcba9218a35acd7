"""Twenty Questions: identify the secret object with yes/no questions and ``guess <object>``.

The answerer is deterministic: each question is matched to one attribute of the fixed object table
(``objects.py``) by the keyword rule documented in ``rules.py``, and answered from the table. A question
that matches no attribute, or two attributes equally well, is not understood: an invalid action that costs
no question. Every understood question and every guess uses one of the budget. Reward 1.0 for naming the
object (won); an exhausted budget ends the episode (lost). ``info["score"]`` is 1.0 on a win, else 0.0.
``state_key`` is the set of facts learnt, the wrong guesses and the questions used.

Difficulty: ``easy`` 25 everyday objects and 20 questions; ``medium`` all 100 objects and 20; ``hard``
100 objects and 12. The instruction lists the candidate objects; the system prompt lists the properties.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ...core import InvalidAction, Step, TextEnv
from ..common import clip, normalise, resolve_difficulty
from . import rules
from .objects import ATTRIBUTES

_GUESS = re.compile(r"^(?:guess|is it|answer|it is|it's)\s*:?\s*(.+)$")
_TOPICS = "; ".join(a.question for a in ATTRIBUTES.values())


class TwentyQuestionsEnv(TextEnv):
    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn reply with one yes/no question': 'Each turn, ask one yes/no question',
    }
    system_prompt = (
        "You are playing Twenty Questions. Each turn reply with one yes/no question about a single property, "
        "or 'guess <object>' to name the object. Understood properties: " + _TOPICS
    )

    def __init__(self, difficulty: str = "medium", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        resolve_difficulty(rules.PRESETS, difficulty, "TwentyQuestions")
        self.difficulty = difficulty.lower()
        self.secret = ""
        self.facts: dict[str, bool] = {}
        self.wrong: list[str] = []
        self.used = 0

    @property
    def preset(self) -> rules.TwentyQuestionsPreset:
        return rules.PRESETS[self.difficulty]

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        p = self.preset
        self.secret = p.objects[int(self.np_random.integers(len(p.objects)))]
        self.facts, self.wrong, self.used = {}, [], 0
        instruction = (
            f"I am thinking of one of these objects: {', '.join(sorted(p.objects))}. Find it with at most "
            f"{p.max_questions} questions (guesses count): ask yes/no questions about one property at a time, "
            "e.g. 'Is it an animal?', and name it with 'guess <object>'."
        )
        return instruction, {"instruction": instruction, "system_prompt": self.system_prompt}

    def _step(self, action: str) -> Step:
        text = normalise(action)
        guess = _GUESS.match(text)
        if guess and (text.startswith("guess") or rules.object_named(guess.group(1))):
            return self._guess(guess.group(1), action)
        attribute, why = rules.match_attribute(text)
        if attribute is None:
            named = rules.object_named(text)
            hint = f" To name an object, reply 'guess {named}'." if named else ""
            raise InvalidAction(f"I did not understand {clip(action)}: {why}. No question was used.{hint}")
        value = rules.answer(self.secret, attribute)
        base, base_value = rules.canonical(attribute, value)
        self.facts[base] = base_value
        self.used += 1
        return self._after(f"{ATTRIBUTES[attribute].question} {'Yes' if value else 'No'}.")

    def _guess(self, name_text: str, action: str) -> Step:
        name = rules.object_named(name_text)
        if name is None or name not in self.preset.objects:
            raise InvalidAction(f"{clip(name_text)} is not one of the candidate objects listed in the instruction. "
                                "No question was used.")
        self.used += 1
        if name == self.secret:
            return Step(f"Yes! It is {name}. Found with {self.used} questions.", reward=1.0, terminated=True,
                        won=True, score=1.0, info={"metrics": {"questions": float(self.used)}})
        if name not in self.wrong:
            self.wrong.append(name)
        return self._after(f"No, it is not {name}.")

    def _after(self, answer: str) -> Step:
        left = self.preset.max_questions - self.used
        info = {"metrics": {"questions": float(self.used)}}
        if left <= 0:
            return Step(f"{answer} No questions left. It was {self.secret}.", terminated=True, won=False, score=0.0,
                        info=info)
        return Step(f"{answer} {left} question{'s' if left != 1 else ''} left.", info=info)

    def expert_action(self) -> str:
        """Ask the question that splits the remaining candidates most evenly; guess when one is left."""
        return rules.solver_action(self.preset.objects, self.facts, self.wrong)

    def random_action(self, rng: np.random.Generator) -> str:
        """A random canonical question or, one time in four, a random guess."""
        if rng.random() < 0.25:
            objects = self.preset.objects
            return f"guess {objects[int(rng.integers(len(objects)))]}"
        questions = [a.question for a in ATTRIBUTES.values()]
        return questions[int(rng.integers(len(questions)))]

    def state_key_material(self) -> str:
        facts = ",".join(f"{k}={int(v)}" for k, v in sorted(self.facts.items()))
        return f"20q|{self.difficulty}|{self.used}|{facts}|{','.join(sorted(self.wrong))}"
