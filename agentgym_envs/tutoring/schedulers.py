"""Scripted practice schedulers: the BKT-greedy expert, round-robin practice, and random.

They read only the :class:`SchedulingView` (the learner's
dashboard and mood), never the hidden state.

* **expert**: rest when the learner is tired; otherwise work on the least-mastered component (by BKT
  estimate) whose prerequisites look mastered, practising it, and studying a worked example right after a
  wrong answer; finish when every estimate is at least :data:`DONE`.
* **round_robin**: practice each component in turn, never rest or study.
* **random**: uniform over the valid actions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium
import numpy as np

from .domain import COMPONENT_IDS, COMPONENTS

DONE = 0.95
READY = 0.6


@dataclass
class SchedulingView:
    """What a scheduler can know: the dashboard, the learner's mood and the last outcome per component."""

    horizon: int
    estimates: dict[str, float] = field(default_factory=dict)
    right: dict[str, int] = field(default_factory=dict)
    tried: dict[str, int] = field(default_factory=dict)
    last_correct: dict[str, bool] = field(default_factory=dict)
    last_kind: dict[str, str] = field(default_factory=dict)
    activities: int = 0
    mood: str = "fresh"


def expert_scheduler(view: SchedulingView) -> str:
    """The expert's next activity (see the module docstring)."""
    if view.mood != "fresh" and view.activities < view.horizon - 1:
        return "rest()"
    open_ = [c for c in COMPONENT_IDS if view.estimates[c] < DONE]
    if not open_:
        return "finish()"
    ready = [c for c in open_ if all(view.estimates[p] >= READY for p in COMPONENTS[c].prerequisites)]
    component = min(ready or open_, key=lambda c: (view.estimates[c], COMPONENT_IDS.index(c)))
    if view.last_kind.get(component) == "practice" and not view.last_correct.get(component, True):
        return f"study(component={component!r})"
    return f"practice(component={component!r})"


def round_robin(view: SchedulingView) -> str:
    return f"practice(component={COMPONENT_IDS[view.activities % len(COMPONENT_IDS)]!r})"


def _random(env: gymnasium.Env, rng: np.random.Generator) -> str:
    actions = env.unwrapped.valid_actions()
    return actions[int(rng.integers(len(actions)))]


Scheduler = Callable[[gymnasium.Env, np.random.Generator], str]
SCHEDULERS: dict[str, Scheduler] = {
    "expert": lambda env, rng: expert_scheduler(env.unwrapped.view),
    "round_robin": lambda env, rng: round_robin(env.unwrapped.view),
    "random": _random,
}
