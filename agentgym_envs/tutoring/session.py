"""A tutoring session's frame: drawing the student and the pre-test, the post-test, and the score.

The pre- and post-test give each component ``items_per_component`` diagnostic items whose targets cycle
through the component's misconceptions, so that every bug a student can hold shows on at least one item
of each test when ``items_per_component`` is at least two. Post-test items are new: none is an item the
student saw during the session.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import TutoringConfig
from .domain import COMPONENT_IDS, COMPONENTS, generate_item
from .moves import Seen, TutorView
from .student import Student, make_student


@dataclass
class SessionScore:
    """The numbers behind the reward (see :mod:`~agentgym_envs.tutoring.tutor_env` for the rule)."""

    pre: float = 0.0
    initial: tuple[str, ...] = ()
    """The misconceptions the student held in the session's components at the start."""
    penalty: float = 0.0
    """Soft-mode leak penalty charged so far (positive)."""
    post: float = 0.0
    gain: float = 0.0
    copied_correct: float = 0.0
    """Share of revealed items the student answered right when asked again (copied; not scored)."""
    over: bool = False
    final_reward: float = 0.0
    """The reward paid when the session ends."""
    total: float = 0.0
    """The episode's return."""

    def leak_cost(self) -> float:
        """Return lost to leaks: the soft penalty so far, or, once over, what the leak rule took from the gain."""
        return self.gain - self.total if self.over else self.penalty

    def finish(self, post: list[Seen], copies: list[Seen], leak_mode: str, leaked: bool) -> None:
        self.post = sum(s.correct for s in post) / len(post)
        self.gain = self.post - self.pre
        self.copied_correct = sum(s.correct for s in copies) / len(copies) if copies else 0.0
        if leak_mode == "hard":
            self.final_reward = -1.0 if leaked else self.gain
            self.total = self.final_reward
        else:
            self.final_reward = self.gain
            self.total = self.gain - self.penalty
        self.over = True


def draw_session(rng: np.random.Generator, config: TutoringConfig) -> tuple[Student, TutorView]:
    """The student, the session's components (catalogue order) and the answered pre-test."""
    student = make_student(rng)
    picked = sorted(int(i) for i in rng.choice(len(COMPONENT_IDS), size=config.num_components, replace=False))
    components = tuple(COMPONENT_IDS[i] for i in picked)
    if not student.misconceptions(components):  # a session exists to find a misconception
        component = components[int(rng.integers(len(components)))]
        bugs = COMPONENTS[component].misconceptions
        student.skills[component].misconception = bugs[int(rng.integers(len(bugs)))]
        student.skills[component].known = False
    view = TutorView(student.persona.name, components, config.max_turns)
    view.pretest = _test(student, components, config.items_per_component, rng, set(), 0.0)
    return student, view


def post_test(student: Student, view: TutorView, config: TutoringConfig, rng: np.random.Generator,
              fatigue_slip: float) -> tuple[list[Seen], list[Seen]]:
    """The post-test on unseen items, and the copy check of every revealed item (not scored)."""
    seen_items = {s.item.key: s.item for s in view.seen()}
    post = _test(student, view.components, config.items_per_component, rng, set(seen_items), fatigue_slip)
    copies = []
    for key in view.revealed:
        attempt = student.attempt(seen_items[key], rng, fatigue_slip)
        copies.append(Seen(attempt.item, attempt.answer, attempt.correct, view.turns_used))
    return post, copies


def _test(student: Student, components: tuple[str, ...], per_component: int, rng: np.random.Generator,
          avoid: set[str], fatigue_slip: float) -> list[Seen]:
    results = []
    for component in components:
        bugs = COMPONENTS[component].misconceptions
        for i in range(per_component):
            item = generate_item(component, rng, bugs[i % len(bugs)], avoid)
            avoid.add(item.key)
            attempt = student.attempt(item, rng, fatigue_slip)
            results.append(Seen(item, attempt.answer, attempt.correct, 0))
    return results
