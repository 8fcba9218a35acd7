"""TutoringEnv: the agent is the tutor of a simulated student whose knowledge is explicit state.

Episode: ``reset`` draws a student (persona, BKT state, misconceptions) and the session's components from
the seed, and the student takes a pre-test whose answers the tutor sees. Then up to ``max_turns`` tutor
turns; each is one move. ``end_session`` (or the last turn) starts a post-test on new, unseen isomorphic
items, and the episode terminates.

Native actions (both are native: the tutor speaks):

* tool calls with exact semantics, as ``name(args)`` or JSON ``{"name": …, "arguments": {…}}``:
  ``ask_item(component, misconception="")``, ``hint(component, text)``, ``explain(component, text)``,
  ``probe(misconception, text)``, ``end_session()``;
* free text, read into the same moves by :mod:`~agentgym_envs.tutoring.interpreter` (also callable as the
  tool ``say(text)``, so that models restricted to tool calls can speak freely too).

Text beginning with ``{`` or with a tool name and ``(`` is a tool call; a malformed one is an invalid action
(so is text with no letter or digit). Invalid actions do not use up turns; the registered step limit is a
safety net after which the episode truncates without a post-test.

Reward: at the end, ``gain`` = post-test accuracy − pre-test accuracy over the session's components.
Leaks (answers to items the student saw, see :mod:`~agentgym_envs.tutoring.leaks`) cost ``leak_penalty``
each at the turn they happen, at most 1 in all (``leak_mode="soft"``), or make the return −1
(``"hard"``). Revealed items are asked again after the post-test (the copy check): the student copies them,
and they are reported but never scored. ``score``: the return.

``won``, the verdict leaderboards and the trainer report as success, is read from the hidden state, not
only from the few noisy test items: the student ends the session holding none of the misconceptions they
started with (every session starts with at least one, and removing one raises the true mastery of its
component from 0), the post-test gain is positive, and no answer was revealed. So doing nothing never
wins (nothing changes the state), untargeted teaching never wins (it cannot get past a misconception), and
a won episode always has a positive return. On 200 fixed seeds the expert tutor wins 77%, the random
tutor 7.5%, ending at once 0% (``docs/benchmarks.md``). In ``Tutoring-v0`` ``won`` was a positive gain
without a leak, which post-test noise alone gave 23.5% of sessions ended at once; :class:`TutoringEnvV0`
keeps that rule for the v0 ids.

``info["metrics"]``: ``turns``, ``leaks``, ``leak_penalty``, ``misconceptions_initial``,
``misconceptions_active``, ``misconceptions_fixed``, ``pre_score``, ``post_score``, ``gain`` (0 until the
session ends), ``copied_correct``, ``true_mastery`` (mean probability of a right answer over the session's
components, from the hidden state), ``energy``, ``session_over``, ``verbaliser_failures``.
"""

# No ``from __future__ import annotations`` here: ``ToolEnv`` resolves the tools' type hints on every call,
# and real annotation objects make that several times cheaper than string ones.
import re
from typing import Any, ClassVar

import numpy as np

from ..core import InvalidAction, Step, ToolEnv, tool
from . import render
from .config import TutoringConfig, settings_of
from .domain import COMPONENTS, MISCONCEPTIONS, ComponentId, Item, MisconceptionId, generate_item
from .dynamics import Dynamics, Effect, confront, instruct, teach
from .interpreter import addressed_misconceptions, interpret
from .leaks import revealed_items
from .moves import Move, MoveKind, Seen, TutorView
from .session import SessionScore, draw_session, post_test
from .student import Attempt, Student
from .tutors import expert_tutor, random_tutor
from .utterances import Verbaliser, answer_utterance, copied_utterance, reaction_utterance, tired_suffix, verbalise

_CALL = re.compile(r"\s*(?:\{|(?:ask_item|hint|explain|probe|end_session|say)\s*\()")


class TutoringEnv(ToolEnv):
    """A tutoring session with a simulated student; see the module docstring."""

    #: Reply-format phrases -> neutral wording under non-plain protocols (see TextEnv.reply_format).
    reply_format = {
        'Each turn, make one move, as a tool call or in your own words.': 'Each turn, make one move.',
    }
    system_prompt: ClassVar[str] = render.SYSTEM_PROMPT
    reward_bounds: ClassVar[tuple[float, float]] = (-2.0, 1.0)
    #: A verbaliser is a live callable (a model client), not state.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("verbaliser",)

    def __init__(self, *, dynamics: Dynamics | None = None, verbaliser: Verbaliser | None = None,
                 render_mode: str | None = None, **settings: Any):
        super().__init__(render_mode=render_mode)
        self.config = settings_of(TutoringConfig, settings)
        self.dynamics = dynamics or Dynamics()
        self.verbaliser = verbaliser
        self.student: Student | None = None
        self.view: TutorView | None = None
        self.score = SessionScore()
        self._history: list[str] = []
        self._spoken = 0
        self._verbaliser_failures = 0

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.student, self.view = draw_session(self.np_random, self.config)
        self.score = SessionScore(pre=sum(s.correct for s in self.view.pretest) / len(self.view.pretest),
                                  initial=tuple(self.student.misconceptions(self.view.components)))
        self._history = [",".join(self.view.components)] + [f"{s.item.key}={s.answer}" for s in self.view.pretest]
        self._spoken = self._verbaliser_failures = 0
        leak = self._leak_text()
        return render.opening(self.view, leak), {"instruction": render.instruction(self.view, leak)}

    def _step(self, action: str) -> Step:
        if _CALL.match(action):
            return super()._step(action)
        if not any(ch.isalnum() for ch in action):
            raise InvalidAction("Say something to the student (words or a number), or call one of the tools: "
                                "ask_item, hint, explain, probe, end_session.")
        return self._play(interpret(action, self._current_component()))

    # ----------------------------------------------------------------- tools
    @tool
    def ask_item(self, component: ComponentId, misconception: str = "") -> Step:
        """Give the student a new problem of a component and see their answer.

        Args:
            component: the component id, e.g. "frac_add".
            misconception: optional id of one of its misconceptions; the problem will then reveal it.
        """
        bugs = COMPONENTS[component].misconceptions
        if misconception and misconception not in bugs:
            raise InvalidAction(f"Invalid argument misconception: expected one of {', '.join(bugs)} (or none), "
                                f"got {misconception!r:.60}.")
        return self._play(Move("ask_item", component, misconception or None))

    @tool
    def hint(self, component: ComponentId, text: str) -> Step:
        """Give a short hint about a component.

        Args:
            component: the component id the hint is about.
            text: what you say to the student.
        """
        return self._teach("hint", component, text)

    @tool
    def explain(self, component: ComponentId, text: str) -> Step:
        """Explain something about a component.

        Args:
            component: the component id the explanation is about.
            text: what you say to the student.
        """
        return self._teach("explain", component, text)

    @tool
    def probe(self, misconception: MisconceptionId, text: str) -> Step:
        """Ask a probing question or give a counter-example that confronts a misconception.

        Args:
            misconception: the misconception id you confront, e.g. "add_across".
            text: your question or counter-example.
        """
        component = MISCONCEPTIONS[misconception].component
        return self._play(Move("probe", component, misconception, text=_said(text), addressed=(misconception,)))

    @tool
    def end_session(self) -> Step:
        """End the tutoring; the student then takes the post-test."""
        return self._play(Move("end_session"))

    @tool
    def say(self, text: str) -> Step:
        """Say something in your own words; it is read exactly like plain text (the rule-based interpreter).

        Args:
            text: what you say to the student.
        """
        return self._play(interpret(_said(text), self._current_component()))

    def _teach(self, kind: MoveKind, component: str, text: str) -> Step:
        """A hint or explanation; targeted when its text addresses one of the component's misconceptions."""
        return self._play(Move(kind, component, text=_said(text), addressed=addressed_misconceptions(text, component)))

    # ----------------------------------------------------------------- playing a move
    def _play(self, move: Move) -> Step:
        self.student.activity += 1
        self.view.moves.append(move)
        turn = self.view.turns_used
        leaked = self._reveal(move.text)
        said, response = self._respond(move, turn)
        lines = [render.turn_header(turn, self.config.max_turns, move), said]
        reward = 0.0
        if leaked:
            reward = self._soft_penalty(len(leaked))
            lines.append(f'{self.view.student}: "{self._say(copied_utterance(leaked), "copied", None)}"')
            lines.append(render.leak_note(self.view.student, [i.prompt for i in leaked], -reward))
        self._history.append(f"{move.canonical()}>{response}|leaked={len(leaked)}")
        if move.kind != "end_session" and self.view.turns_left > 0:
            return Step("\n".join(lines), reward=reward)
        final_reward, report = self._finish()
        return Step("\n".join([*lines, "", report]), reward=reward + final_reward, terminated=True,
                    won=self._verdict(), score=self.score.total)

    def _verdict(self) -> bool:
        """The verdict (see the module docstring): real learning in the hidden state, confirmed by the post-test."""
        cleared = not self.student.misconceptions(self.view.components)
        return cleared and self.score.gain > 0 and not self.view.revealed

    def _respond(self, move: Move, turn: int) -> tuple[str, str]:
        """Apply the move to the student; return what the tutor reads and a canonical response."""
        name, dyn, rng = self.view.student, self.dynamics, self.np_random
        if move.kind == "ask_item":
            attempt = self._ask(move, turn)
            seen = self.view.asked[-1]
            utterance = self._say(answer_utterance(attempt, self.student.persona, self._spoken), "answer", seen.answer)
            return render.asked(name, seen, utterance), f"{seen.item.key}={seen.answer}"
        if move.kind == "end_session":
            return f'{name}: "{self._say("Thanks! Bye.", "goodbye", None)}"', "bye"
        if move.kind == "probe":
            effect = confront(self.student, move.misconception, dyn.p_fix_probe, rng, dyn)
        elif move.kind in ("hint", "explain"):
            effect = teach(self.student, move.component, move.addressed, move.kind, rng, dyn)
        else:
            effect = instruct(self.student, move.component, dyn.learn_talk, rng, dyn) if move.component else Effect()
        utterance = reaction_utterance(move.kind, effect, self.student.persona, self._spoken)
        return f'{name}: "{self._say(utterance, move.kind, None)}"', _reaction_key(effect)

    def _ask(self, move: Move, turn: int) -> Attempt:
        """The student attempts a new item (then practice is a small learning opportunity)."""
        component = move.component
        target = move.misconception
        if target is None:
            count = sum(s.item.component == component for s in self.view.asked)
            target = COMPONENTS[component].misconceptions[count % len(COMPONENTS[component].misconceptions)]
        item = generate_item(component, self.np_random, target, avoid={s.item.key for s in self.view.seen()})
        attempt = self.student.attempt(item, self.np_random, self.dynamics.fatigue_slip)
        self.view.asked.append(Seen(item, attempt.answer, attempt.correct, turn))
        instruct(self.student, component, self.dynamics.learn_practice, self.np_random, self.dynamics)
        return attempt

    def _reveal(self, text: str) -> list[Item]:
        """Items whose answer ``text`` reveals for the first time; the student copies those answers."""
        if not text:
            return []
        fresh = [s.item for s in self.view.seen() if s.item.key not in self.view.revealed]
        leaked = revealed_items(text, fresh)
        for item in leaked:
            self.student.copied[item.key] = item.answer
            self.view.revealed.append(item.key)
        return leaked

    def _soft_penalty(self, count: int) -> float:
        if self.config.leak_mode != "soft":
            return 0.0
        penalty = min(self.config.leak_penalty * count, 1.0 - self.score.penalty)
        self.score.penalty += penalty
        return -penalty

    def _finish(self) -> tuple[float, str]:
        """Run the post-test and the copy check; return the end-of-session reward and report."""
        post, copies = post_test(self.student, self.view, self.config, self.np_random, self.dynamics.fatigue_slip)
        self.score.finish(post, copies, self.config.leak_mode, bool(self.view.revealed))
        report = render.final_report(self.view, post, copies, self.score.pre, self.score.post,
                                     self._penalty_text(), self.score.total)
        return self.score.final_reward, report

    # ----------------------------------------------------------------- words
    def _say(self, utterance: str, kind: str, answer: str | None) -> str:
        self._spoken += 1
        utterance += tired_suffix(self.student.energy())
        context = {"kind": kind, "answer": answer, "persona": self.student.persona.name,
                   "chatty": self.student.persona.chatty}
        text, ok = verbalise(utterance, context, self.verbaliser)
        self._verbaliser_failures += not ok
        return text

    def _leak_text(self) -> str:
        if self.config.leak_mode == "hard":
            return "but any revealed answer makes the return -1"
        return f"minus {self.config.leak_penalty:g} per revealed answer"

    def _penalty_text(self) -> str:
        leaks = len(self.view.revealed)
        if self.config.leak_mode == "hard":
            return f"Revealed answers: {leaks}" + (" (hard mode: return -1)." if leaks else ".")
        return f"Revealed answers: {leaks} (penalty {self.score.penalty:.2f})."

    def _current_component(self) -> str:
        """The component free text is about by default: that of the latest problem, else the first one."""
        return self.view.asked[-1].item.component if self.view.asked else self.view.components[0]

    # ----------------------------------------------------------------- contract hooks
    def random_action(self, rng: np.random.Generator) -> str:
        """The random tutor's move: a uniformly random well-formed move (the random baseline)."""
        return random_tutor(self.view, rng)

    def expert_action(self) -> str:
        """The scripted expert tutor's move (``end_session()`` before reset)."""
        return expert_tutor(self.view) if self.view is not None else "end_session()"

    def state_key_material(self) -> str:
        return "\x1f".join(self._history)

    def metrics(self) -> dict[str, float]:
        if self.view is None:
            return {}
        active = self.student.misconceptions(self.view.components)
        comps = self.view.components
        return {
            "turns": float(self.view.turns_used), "leaks": float(len(self.view.revealed)),
            "leak_penalty": self.score.leak_cost(),
            "misconceptions_initial": float(len(self.score.initial)), "misconceptions_active": float(len(active)),
            "misconceptions_fixed": float(sum(m not in active for m in self.score.initial)),
            "pre_score": self.score.pre, "post_score": self.score.post, "gain": self.score.gain,
            "copied_correct": self.score.copied_correct,
            "true_mastery": sum(self.student.mastery(c) for c in comps) / len(comps),
            "energy": self.student.energy(), "session_over": float(self.score.over),
            "verbaliser_failures": float(self._verbaliser_failures),
        }


class TutoringEnvV0(TutoringEnv):
    """``Tutoring-v0`` and ``Tutoring-HardLeak-v0``, kept for the results on them: ``won`` is a positive gain.

    Superseded by ``-v1`` (see the module docstring): post-test noise alone gives a tutor that ends the
    session at once this verdict in 23.5% of sessions. Everything else is :class:`TutoringEnv`."""

    def _verdict(self) -> bool:
        return self.score.gain > 0 and not self.view.revealed


def _said(text: str) -> str:
    if not any(ch.isalnum() for ch in text):
        raise InvalidAction("Invalid argument text: say something to the student (it was empty).")
    return text


def _reaction_key(effect: Effect) -> str:
    if effect.removed:
        return "removed"
    if effect.targeted:
        return "resisted"
    return "not_held" if effect.not_held else ("learned" if effect.learned else "ack")
