"""PracticeSchedulingEnv: choose what a simulated learner does next, over a long horizon.

SocialCoach-like: the agent is a practice scheduler, not a tutor in dialogue. Each step is one activity
for a learner drawn from the seed (the same students as the tutoring env, over all six components):

* ``practice(component)``: the learner answers a new diagnostic item and is told right or wrong; one BKT
  learning opportunity, and marking a buggy answer wrong may dislodge the misconception (``p_fix_feedback``);
* ``study(component)``: a worked example contrasting the right way with the common errors: 1.5 learning
  opportunities, or a chance to remove an active misconception (``p_fix_study``); shows no performance;
* ``rest()``: recovers 8 activities' worth of fatigue;
* ``finish()``: stop early.

Learning is slower for components whose prerequisites are not mastered, and tired learners learn less and
slip more (see :mod:`~agentgym_envs.tutoring.dynamics`). Observations report the activity, its outcome,
the learner's mood, and a dashboard of attempts and BKT estimates (population-default parameters).

Reward: at the end (``finish`` or ``horizon`` activities), the final mastery: the mean over components of
the probability of answering a new item right, from the hidden state. ``won``: final mastery ≥
``mastery_threshold``; ``score``: final mastery. ``info["valid_actions"]`` lists the 14 actions.
``info["metrics"]``: ``activities``, ``practice``, ``study``, ``rest``, ``true_mastery``, ``final_mastery``
(0 until the end), ``misconceptions_active``, ``mean_estimate``, ``energy``.
"""

# No ``from __future__ import annotations``: ToolEnv resolves tool type hints per call (cheaper when real).
from typing import Any, ClassVar

from ..core import Step, ToolEnv, tool
from . import bkt
from .config import SchedulingConfig, settings_of
from .domain import COMPONENT_IDS, COMPONENTS, ComponentId, generate_item
from .dynamics import Dynamics, confront, instruct
from .schedulers import SchedulingView, expert_scheduler
from .student import Student, make_student
from .utterances import show_answer

REST_RECOVERY = 8

SYSTEM_PROMPT = (
    "You schedule practice for a learner of school math. Each turn call one tool: practice(component) (a problem "
    "with right/wrong feedback), study(component) (a worked example), rest(), or finish(). Components: "
    + ", ".join(f"{c.id} ({c.name})" for c in COMPONENTS.values())
    + ". Prerequisites make later components easier; tired learners learn less. Your reward is the learner's "
    "final mastery across all components."
)


def _defaults(component: str) -> bkt.BKTParams:
    return bkt.DEFAULT_CHOICE if COMPONENTS[component].guess >= 0.5 else bkt.DEFAULT_OPEN


def _mood(energy: float) -> str:
    return "fresh" if energy > 0.75 else ("a bit tired" if energy > 0.4 else "exhausted")


class PracticeSchedulingEnv(ToolEnv):
    """A learner, a horizon of activities, and a scheduler; see the module docstring."""

    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn call one tool:': 'Each turn, choose one activity:',
    }
    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    reward_bounds: ClassVar[tuple[float, float]] = (0.0, 1.0)

    def __init__(self, *, dynamics: Dynamics | None = None, render_mode: str | None = None, **settings: Any):
        super().__init__(render_mode=render_mode)
        self.config = settings_of(SchedulingConfig, settings)
        self.dynamics = dynamics or Dynamics()
        self.learner: Student | None = None
        self.view = SchedulingView(self.config.horizon)
        self._counts = {"practice": 0, "study": 0, "rest": 0}
        self._final = 0.0
        self._history: list[str] = []

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.learner = make_student(self.np_random)
        self.view = SchedulingView(self.config.horizon, {c: _defaults(c).p_init for c in COMPONENT_IDS},
                                   dict.fromkeys(COMPONENT_IDS, 0), dict.fromkeys(COMPONENT_IDS, 0))
        self._counts, self._final, self._history = {"practice": 0, "study": 0, "rest": 0}, 0.0, []
        instruction = (f"Schedule {self.config.horizon} activities for {self.learner.persona.name} to maximise "
                       f"their final mastery across {len(COMPONENT_IDS)} math components.")
        return f"{instruction}\n\n{self._dashboard()}", {"instruction": instruction}

    # ----------------------------------------------------------------- tools
    @tool
    def practice(self, component: ComponentId) -> Step:
        """The learner solves a new problem of a component and is told whether it was right.

        Args:
            component: the component id, e.g. "frac_add".
        """
        rng, dyn = self.np_random, self.dynamics
        bugs = COMPONENTS[component].misconceptions
        item = generate_item(component, rng, bugs[self.view.tried[component] % len(bugs)])
        attempt = self.learner.attempt(item, rng, dyn.fatigue_slip)
        if not attempt.correct and attempt.source in bugs:
            confront(self.learner, attempt.source, dyn.p_fix_feedback, rng, dyn)
        instruct(self.learner, component, 1.0, rng, dyn)
        view = self.view
        view.estimates[component] = bkt.update(view.estimates[component], attempt.correct, _defaults(component))
        view.tried[component] += 1
        view.right[component] += attempt.correct
        view.last_correct[component] = attempt.correct
        mark = "✓" if attempt.correct else f"✗ (correct: {show_answer(item, item.answer)})"
        return self._activity("practice", component, f"{item.prompt} → {show_answer(item, attempt.answer)} {mark}",
                              f"{item.key}={attempt.answer}")

    @tool
    def study(self, component: ComponentId) -> Step:
        """The learner studies a worked example of a component (right way and common errors).

        Args:
            component: the component id, e.g. "frac_add".
        """
        rng, dyn = self.np_random, self.dynamics
        active = self.learner.skills[component].misconception
        if active is not None:
            confront(self.learner, active, dyn.p_fix_study, rng, dyn)
        else:
            instruct(self.learner, component, dyn.learn_study, rng, dyn)
        self.view.estimates[component] = bkt.transition(self.view.estimates[component], _defaults(component).p_learn)
        return self._activity("study", component, "studied a worked example.", "study")

    @tool
    def rest(self) -> Step:
        """The learner takes a break and recovers from fatigue."""
        learner = self.learner
        learner.rested = min(float(learner.activity + 1), learner.rested + REST_RECOVERY)
        return self._activity("rest", None, "took a break.", "rest")

    @tool
    def finish(self) -> Step:
        """Stop now; the learner's final mastery is assessed."""
        self._history.append("finish")
        return self._end("You finished the schedule.")

    # ----------------------------------------------------------------- episode mechanics
    def _activity(self, kind: str, component: str | None, outcome: str, key: str) -> Step:
        self.learner.activity += 1
        self._counts[kind] += 1
        view = self.view
        view.activities += 1
        view.mood = _mood(self.learner.energy())
        if component is not None:
            view.last_kind[component] = kind
        self._history.append(f"{kind}({component}):{key}")
        where = f" on {COMPONENTS[component].name}" if component else ""
        text = f"Activity {view.activities}/{view.horizon}: {kind}{where}: {self.learner.persona.name} {outcome}"
        if view.activities >= view.horizon:
            return self._end(text)
        return Step(f"{text}\n\n{self._dashboard()}")

    def _end(self, text: str) -> Step:
        self._final = self._mastery()
        won = self._final >= self.config.mastery_threshold
        report = f"{text}\n\nFinal mastery across components: {self._final:.2f}."
        return Step(report, reward=self._final, terminated=True, won=won, score=self._final)

    def _mastery(self) -> float:
        return sum(self.learner.mastery(c) for c in COMPONENT_IDS) / len(COMPONENT_IDS)

    def _dashboard(self) -> str:
        view = self.view
        lines = [f"{self.learner.persona.name} looks {view.mood}. Activities used: {view.activities}/{view.horizon}.",
                 "Dashboard (right/tried; BKT estimate with population defaults):"]
        for c in COMPONENT_IDS:
            needs = ", ".join(COMPONENTS[c].prerequisites) or "nothing"
            lines.append(f"- {c}: {view.right[c]}/{view.tried[c]}, estimate {view.estimates[c]:.2f} "
                         f"(builds on {needs})")
        return "\n".join(lines)

    # ----------------------------------------------------------------- contract hooks
    def valid_actions(self) -> list[str] | None:
        if self.learner is None:
            return None
        calls = [f"{kind}(component={c!r})" for kind in ("practice", "study") for c in COMPONENT_IDS]
        return [*calls, "rest()", "finish()"]

    def expert_action(self) -> str:
        """The BKT-greedy expert scheduler's next activity (``finish()`` before reset)."""
        return expert_scheduler(self.view) if self.learner is not None else "finish()"

    def state_key_material(self) -> str:
        return "\x1f".join(self._history)

    def metrics(self) -> dict[str, float]:
        if self.learner is None:
            return {}
        return {
            "activities": float(self.view.activities), **{k: float(v) for k, v in self._counts.items()},
            "true_mastery": self._mastery(), "final_mastery": self._final,
            "misconceptions_active": float(len(self.learner.misconceptions())),
            "mean_estimate": sum(self.view.estimates.values()) / len(COMPONENT_IDS), "energy": self.learner.energy(),
        }
