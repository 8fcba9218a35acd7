"""Simulated students whose knowledge is explicit state, and who answer by their actual procedure.

Per component a student holds a BKT skill (parameters and a latent ``known`` flag, see :mod:`.bkt`) and at
most one active misconception. An answer is computed, never sampled from an opinion about the student:

1. an item whose answer the tutor revealed is answered with the copied answer;
2. a student holding a misconception for the component answers by its buggy procedure, every time
   (consistent bugs, as in Brown & Burton, 1978);
3. otherwise a student who knows the component is right unless they slip (slips grow with fatigue), and
   one who does not is right only by guessing; wrong answers are plausible slips no bug predicts.

Personas come from the seed: ``ability`` (prior knowledge, misconception rate, learning and slip rates),
``persistence`` (tutor turns before fatigue sets in) and ``talkativeness`` (whether they explain their
working). Learning itself lives in :mod:`.dynamics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .bkt import BKTParams
from .domain import COMPONENTS, MISCONCEPTIONS, Item, wrong_answer

Ability = Literal["low", "average", "high"]

NAMES = ("Maya", "Leo", "Aisha", "Tom", "Priya", "Jonas", "Sofia", "Kenji", "Amara", "Lucas", "Mei", "Omar",
         "Elena", "Noah", "Zara", "Mateo", "Ines", "Kofi", "Hana", "Felix", "Nadia", "Ravi", "Lena", "Yusuf")

#: ability -> (P(known) at start, P(misconception) per component, P(learn), P(slip)).
ABILITY_PROFILES: dict[str, tuple[float, float, float, float]] = {
    "low": (0.15, 0.55, 0.08, 0.12),
    "average": (0.30, 0.45, 0.12, 0.08),
    "high": (0.50, 0.35, 0.18, 0.05),
}
ABILITY_WEIGHTS = (0.3, 0.45, 0.25)


@dataclass(frozen=True)
class Persona:
    name: str
    ability: Ability
    persistence: int
    """Tutor turns the student takes before fatigue sets in."""
    talkativeness: float
    """In [0, 1]; above one half the student explains their working."""

    @property
    def chatty(self) -> bool:
        return self.talkativeness > 0.5


@dataclass
class Skill:
    """One component's state: BKT parameters, the latent known flag, and the active misconception."""

    params: BKTParams
    known: bool
    misconception: str | None = None


@dataclass(frozen=True)
class Attempt:
    """A student's answer to an item and the procedure that produced it (``source``, hidden from tutors)."""

    item: Item
    answer: str
    correct: bool
    source: str
    """A misconception id, or ``skill``, ``slip``, ``guess``, ``unknown``, ``copied``."""


@dataclass
class Student:
    persona: Persona
    skills: dict[str, Skill]
    copied: dict[str, str] = field(default_factory=dict)
    """Item key -> the answer a tutor revealed for it (copied on that item only)."""
    activity: int = 0
    """Tutor turns (or practice activities) so far: drives fatigue."""
    rested: float = 0.0
    """Turns of fatigue removed by rests (practice scheduling)."""

    def energy(self) -> float:
        """1 while fresh; decays exponentially once ``activity`` exceeds the persona's persistence."""
        over = max(0.0, self.activity - self.rested - self.persona.persistence)
        return math.exp(-over / self.persona.persistence)

    def attempt(self, item: Item, rng: np.random.Generator, fatigue_slip: float = 0.0) -> Attempt:
        """Answer ``item`` by the student's actual procedure (see the module docstring)."""
        if item.key in self.copied:
            answer = self.copied[item.key]
            return Attempt(item, answer, item.is_correct(answer), "copied")
        skill = self.skills[item.component]
        if skill.misconception is not None:
            answer = MISCONCEPTIONS[skill.misconception].answer(item)
            return Attempt(item, answer, item.is_correct(answer), skill.misconception)
        if skill.known:
            slip = skill.params.p_slip + fatigue_slip * (1.0 - self.energy())
            if rng.random() >= slip:
                return Attempt(item, item.answer, True, "skill")
            return Attempt(item, wrong_answer(item, rng), False, "slip")
        if rng.random() < skill.params.p_guess:
            return Attempt(item, item.answer, True, "guess")
        return Attempt(item, wrong_answer(item, rng), False, "unknown")

    def mastery(self, component: str) -> float:
        """Probability of answering a fresh diagnostic item of ``component`` right, fatigue aside."""
        skill = self.skills[component]
        if skill.misconception is not None:
            return 0.0
        return 1.0 - skill.params.p_slip if skill.known else skill.params.p_guess

    def misconceptions(self, components: tuple[str, ...] | None = None) -> list[str]:
        """Active misconceptions (of ``components`` when given), in catalogue order."""
        chosen = self.skills if components is None else components
        return [self.skills[c].misconception for c in chosen if self.skills[c].misconception is not None]

    def ready(self, component: str) -> bool:
        """Whether every prerequisite of ``component`` is known and free of misconceptions."""
        return all(self.skills[p].known and self.skills[p].misconception is None
                   for p in COMPONENTS[component].prerequisites)


def make_student(rng: np.random.Generator) -> Student:
    """A student over every component, drawn from ``rng`` (persona first, then each component in order)."""
    ability: Ability = ("low", "average", "high")[int(rng.choice(3, p=ABILITY_WEIGHTS))]
    persona = Persona(
        name=NAMES[int(rng.integers(len(NAMES)))], ability=ability,
        persistence=int(rng.integers(8, 17)), talkativeness=float(rng.random()),
    )
    p_init, p_bug, p_learn, p_slip = ABILITY_PROFILES[ability]
    skills = {}
    for component in COMPONENTS.values():
        params = BKTParams(
            p_init=p_init, p_learn=round(p_learn * float(rng.uniform(0.75, 1.25)), 4),
            p_guess=component.guess, p_slip=round(p_slip * float(rng.uniform(0.75, 1.25)), 4),
        )
        misconception = None
        if rng.random() < p_bug:
            misconception = component.misconceptions[int(rng.integers(len(component.misconceptions)))]
        known = misconception is None and bool(rng.random() < p_init)
        skills[component.id] = Skill(params, known, misconception)
    return Student(persona, skills)
