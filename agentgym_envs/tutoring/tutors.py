"""Scripted tutors: the expert, the answer-giver, the silent tutor and the random tutor.

Each reads only the :class:`~agentgym_envs.tutoring.moves.TutorView` (what any tutor can know) and returns
a native action. They are the baselines the reward must order: expert > silent ≈ random > answer-giver.

* **expert** diagnoses each component from the answers seen since it was last taught
  (:func:`~agentgym_envs.tutoring.domain.consistent_misconceptions`), probes a diagnosed misconception with
  its counter-example (twice at most, then a targeted explanation), explains the procedure when wrong
  answers fit no bug, and checks with a new item chosen to reveal the suspected bug. Components are served
  least-taught first; a component is done when every answer since its last teaching is right, or after
  :data:`MAX_TEACHING` teaching moves. It never writes a digit, so it never reveals an answer.
* **answer_giver** tells the answers of the problems the student got wrong, then asks new problems and
  tells their answers too.
* **silent** ends the session at once.
* **random** picks a move kind uniformly (ask, hint, explain, probe, talk, end) with uniform arguments and
  generic wording (a random well-formed move, the env's ``random_action``).
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium
import numpy as np

from .domain import COMPONENTS, MISCONCEPTIONS, consistent_misconceptions
from .moves import TutorView
from .utterances import show_answer

MAX_TEACHING = 4
MAX_PROBES = 2

GENERIC_TEACHING = ("Let's think about this one carefully.", "Take your time and check each step.",
                    "What do you notice here?", "Remember what we did last time.", "Slow down and read it again.")
GENERIC_TALK = ("How is school going?", "Good effort so far.", "Let's keep going.", "Take a deep breath.",
                "I like how you are thinking.", "Tell me what you find hard.")


def expert_tutor(view: TutorView) -> str:
    """The expert's move in the current state (see the module docstring)."""
    plans = [(_teaching_count(view, c), i, c) for i, c in enumerate(view.components)]
    for _, _, component in sorted(plans):
        move = _expert_move(view, component)
        if move is None:
            continue
        if move.startswith("ask_item") and view.turns_left <= 1:
            continue  # a check on the last turn can no longer change what the tutor does
        return move
    return "end_session()"


def _expert_move(view: TutorView, component: str) -> str | None:
    last = view.last_teaching_turn(component)
    recent = view.answers_about(component, after_turn=last if last else -1)
    suspect = _suspect(view, component)
    if not recent:
        about = f", misconception={suspect!r}" if suspect else ""
        return f"ask_item(component={component!r}{about})"
    if all(s.correct for s in recent) or _teaching_count(view, component) >= MAX_TEACHING:
        return None
    bugs = consistent_misconceptions((s.item, s.answer) for s in recent)
    if not bugs:
        return f"explain(component={component!r}, text={COMPONENTS[component].explanation!r})"
    bug = MISCONCEPTIONS[bugs[0]]
    if sum(m.kind == "probe" and m.misconception == bug.id for m in view.moves) < MAX_PROBES:
        return f"probe(misconception={bug.id!r}, text={bug.counter_example!r})"
    return f"explain(component={component!r}, text={bug.explanation!r})"


def _teaching_count(view: TutorView, component: str) -> int:
    return sum(m.kind in ("hint", "explain", "probe") and m.component == component for m in view.moves)


def _suspect(view: TutorView, component: str) -> str:
    """The misconception last taught against on ``component`` (the check should be able to reveal it), or ""."""
    for move in reversed(view.moves):
        if move.component == component and move.kind in ("probe", "hint", "explain"):
            if move.kind == "probe":
                return move.misconception
            return move.addressed[0] if move.addressed else ""
    return ""


def answer_giver(view: TutorView) -> str:
    """Tell the answer of every problem the student got wrong; when none is left, ask a new one."""
    for seen in view.seen():
        if not seen.correct and seen.item.key not in view.revealed:
            return f'For "{seen.item.prompt}" the answer is {show_answer(seen.item, seen.item.answer)}.'
    component = view.components[len(view.asked) % len(view.components)]
    return f"ask_item(component={component!r})"


def silent_tutor(view: TutorView) -> str:
    return "end_session()"


def random_tutor(view: TutorView, rng: np.random.Generator) -> str:
    """A uniformly random well-formed move with generic wording (never reveals an answer)."""
    kind = ("ask_item", "hint", "explain", "probe", "talk", "end_session")[int(rng.integers(6))]
    component = view.components[int(rng.integers(len(view.components)))]
    if kind == "ask_item":
        return f"ask_item(component={component!r})"
    if kind in ("hint", "explain"):
        return f"{kind}(component={component!r}, text={GENERIC_TEACHING[int(rng.integers(len(GENERIC_TEACHING)))]!r})"
    if kind == "probe":
        bugs = [m for c in view.components for m in COMPONENTS[c].misconceptions]
        text = GENERIC_TEACHING[int(rng.integers(len(GENERIC_TEACHING)))]
        return f"probe(misconception={bugs[int(rng.integers(len(bugs)))]!r}, text={text!r})"
    if kind == "talk":
        return GENERIC_TALK[int(rng.integers(len(GENERIC_TALK)))]
    return "end_session()"


#: Baseline tutors as ``(env, rng) -> action`` over any (wrapped) tutoring env.
Tutor = Callable[[gymnasium.Env, np.random.Generator], str]
TUTORS: dict[str, Tutor] = {
    "expert": lambda env, rng: expert_tutor(env.unwrapped.view),
    "silent": lambda env, rng: silent_tutor(env.unwrapped.view),
    "random": lambda env, rng: random_tutor(env.unwrapped.view, rng),
    "answer_giver": lambda env, rng: answer_giver(env.unwrapped.view),
}
