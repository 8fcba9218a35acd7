"""Learning dynamics: how each tutoring move changes a student's state. Every rate is a documented field.

The rules, and the findings they encode:

* **Confronting a misconception works better than telling.** A probe or counter-example aimed at the
  student's active misconception removes it with ``p_fix_probe``; a targeted explanation with
  ``p_fix_explain`` and a targeted hint with ``p_fix_hint``, both lower (conceptual change needs the old
  conception to become unsatisfactory first: Posner et al., 1982; Chi, 2008). A move
  aimed at a misconception the student does not hold does nothing.
* **Removal is not yet mastery.** Once the buggy rule is gone the student adopts the correct procedure
  with ``p_adopt``; otherwise they are left without either and must learn the skill.
* **Untargeted teaching only raises mastery slowly, and not past a misconception.** An explanation, hint,
  practice item or chat about a component is one BKT learning opportunity, scaled by ``learn_*`` (a plain
  explanation is worth one opportunity, chat a tenth of one). While the student holds a misconception for the
  component, untargeted teaching is absorbed into the buggy rule and changes nothing.
* **Prerequisites matter.** Learning a component whose prerequisites are not mastered is slower by
  ``prerequisite_factor``.
* **A revealed answer teaches nothing.** The student copies that one answer for that one item (see
  :class:`~agentgym_envs.tutoring.student.Student`); no rate here changes.
* **Long sessions tire the student.** Every probability above is multiplied by the student's energy,
  which decays once the session outlasts their persistence; slips grow by ``fatigue_slip`` × (1 − energy).

The practice-scheduling env adds two moves: a worked example (``learn_study``, ``p_fix_study``) and
practice with right/wrong feedback (``p_fix_feedback`` when the bug shows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .domain import MISCONCEPTIONS
from .student import Student


@dataclass(frozen=True)
class Dynamics:
    """The rates of the learning rules above; all are probabilities or multipliers of ``p_learn``."""

    p_fix_probe: float = 0.6
    """P(remove) for a probe / counter-example aimed at the active misconception."""
    p_fix_explain: float = 0.35
    """P(remove) for an explanation that addresses the active misconception."""
    p_fix_hint: float = 0.25
    """P(remove) for a hint that addresses the active misconception."""
    p_adopt: float = 0.8
    """P(the correct procedure is learnt) when a misconception is removed."""
    learn_explain: float = 1.0
    """Learning opportunities in one untargeted explanation."""
    learn_hint: float = 0.5
    """Learning opportunities in one untargeted hint."""
    learn_practice: float = 0.5
    """Learning opportunities in one practice item (without feedback)."""
    learn_talk: float = 0.1
    """Learning opportunities in one turn of talk about the current component."""
    prerequisite_factor: float = 0.5
    """Multiplier of learning when a prerequisite is not mastered."""
    fatigue_slip: float = 0.25
    """Extra slip probability of an exhausted student (times 1 − energy)."""
    learn_study: float = 1.5
    """Learning opportunities in one worked example (practice scheduling)."""
    p_fix_study: float = 0.2
    """P(remove) for a worked example of a component whose misconception the student holds (scheduling)."""
    p_fix_feedback: float = 0.1
    """P(remove) when practice feedback marks a buggy answer wrong (scheduling)."""

    def __post_init__(self) -> None:
        for name, rate in vars(self).items():
            if rate < 0 or (name.startswith("p_") and rate > 1):
                raise ValueError(f"Dynamics.{name} must be a probability in [0, 1] (or a multiplier >= 0), got {rate}")


@dataclass(frozen=True)
class Effect:
    """What a move did to the student (hidden from tutors; rendered only as the student's reaction)."""

    targeted: str | None = None
    """The active misconception the move addressed, if any."""
    removed: bool = False
    learned: bool = False
    not_held: bool = False
    """The move addressed a misconception the student does not hold."""


def confront(student: Student, misconception: str, p_fix: float, rng: np.random.Generator, dyn: Dynamics) -> Effect:
    """Aim at ``misconception``: remove it with ``p_fix`` × energy if the student holds it."""
    skill = student.skills[MISCONCEPTIONS[misconception].component]
    if skill.misconception != misconception:
        return Effect(not_held=True)
    if rng.random() >= p_fix * student.energy():
        return Effect(targeted=misconception)
    skill.misconception = None
    skill.known = bool(rng.random() < dyn.p_adopt)
    return Effect(targeted=misconception, removed=True, learned=skill.known)


def instruct(student: Student, component: str, opportunities: float, rng: np.random.Generator, dyn: Dynamics) -> Effect:
    """One (scaled) BKT learning opportunity on ``component``; no effect past an active misconception."""
    skill = student.skills[component]
    if skill.known or skill.misconception is not None or opportunities <= 0:
        return Effect()
    readiness = 1.0 if student.ready(component) else dyn.prerequisite_factor
    p = min(1.0, skill.params.p_learn * opportunities * readiness * student.energy())
    if rng.random() < p:
        skill.known = True
        return Effect(learned=True)
    return Effect()


def teach(student: Student, component: str, addressed: tuple[str, ...], kind: str, rng: np.random.Generator,
          dyn: Dynamics) -> Effect:
    """A hint or explanation on ``component`` whose text addresses the misconceptions ``addressed``.

    If it addresses the student's active misconception for the component it is a targeted move (may remove
    it); otherwise it is ordinary instruction.
    """
    active = student.skills[component].misconception
    if active is not None and active in addressed:
        return confront(student, active, dyn.p_fix_hint if kind == "hint" else dyn.p_fix_explain, rng, dyn)
    return instruct(student, component, dyn.learn_hint if kind == "hint" else dyn.learn_explain, rng, dyn)
