"""``agentgym/Reflect-v0``: the prompt is the action (MetaGym/ICT), and its reward is paired and held out.

Each step the reflector writes a *whole* document for the actor — a system prompt in plain text, or one
SKILL.md (front matter and body) — and the actor plays with it. The reward is not the raw win rate: it is
the measured utility of the new document against the previous one,

    r_t = U(D_{t-1} → D_t) = (1/n) Σ_i [R(D_t, i) − R(D_{t-1}, i)]

over ``n`` held-out probe tasks of the base env (:func:`~meta_envs.skills.utility.measure_utility`): both arms
on the same task indices, env seeds and actor RNG (common random numbers), probes disjoint from the training
tasks whose trajectories the observation shows. ``D_0`` is ``initial`` (empty by default: the actor's own
weak default). The new document always replaces the previous one, so an episode's return telescopes to the
held-out gain of the last document over ``D_0`` — rewriting a good prompt in other words earns exactly 0,
reverting a bad one earns back what it lost, and nothing is paid for a win rate the previous prompt already
had.

Arguments (``gymnasium.make`` kwargs): ``family`` (a text family of
:data:`~meta_envs.skills.library_env.FAMILIES`: ``household-heat`` by default, ``household``, ``webshop``,
``search``, ``puzzles`` …), ``actor`` (default :class:`~meta_envs.skills.actor.ProcedureActor`; any policy
through :class:`~meta_envs.skills.model_actor.PolicyActor`, or a spec such as ``hf:tiny`` resolved at construction
by :func:`~meta_envs.skills.model_actor.actor_from_spec`, as SkillLibrary-v0 does), ``n_probes`` (8), ``n_shown`` (2), ``max_rounds`` (3),
``initial`` (``D_0``'s text) and ``token_budget`` (5000).

Observation: the base env, the current document, the last measurement (U, both arms' means, probes fixed
and broken), and trajectories on the training tasks — the actor's under the current document and the
base env's expert's — to reflect on. Action: the document, or ``DONE`` to end the episode. At most
``max_rounds`` documents per episode (invalid ones count).

A plain-text document is shown as one skill named ``system-prompt`` (its body is the text); a SKILL.md is
parsed and validated as any skill (:func:`~meta_envs.skills.skill.parse_skill_md`). Either way it is shown
with ``retrieval="all"`` (:func:`~meta_envs.skills.showing.with_skills`): its text lands in the actor's system
prompt. A malformed SKILL.md, a body over ``token_budget`` tokens (by the tokenizer-free rule and, when the
actor has one, by its own tokenizer: :func:`~meta_envs.skills.model_actor.document_tokens`), or a document with
which the actor's prompt no longer fits its model's context (and did with the previous one) is
``action_valid=False`` with reward −1 (:data:`INVALID_PENALTY`) and leaves the document as it was. Every
reward is cut so the episode's return stays inside ``reward_bounds`` = (−1, 1) (:mod:`meta_envs.bounded_return`):
a second invalid document after the first costs nothing more.

``won`` is whether the current document beats ``D_0`` on the probes (the episode's summed U > 0), ``score``
that summed U. Extra info keys after a measured document: ``round`` (documents submitted so far),
``document_tokens`` (the current document's tokens as the budget counts them), ``utility``
(:meth:`~meta_envs.skills.utility.Utility.to_info`) and ``accepted`` (whether it would pass
:func:`~meta_envs.skills.utility.accept`: U − sd/√n > 0 and few regressions); ``round`` and
``document_tokens`` also on ``DONE`` and on an invalid last round. The base env or the actor failing during a
measurement on its own (a model server gone, the starting document over the context) is ``infra_error``
(reward 0), never the reflector's outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from agentgym_envs.core.errors import InfraError, InvalidAction
from agentgym_envs.core.text_env import Step, TextEnv

from ..bounded_return import BoundedReturn
from .actor import Actor, ProcedureActor
from .model_actor import ActorContextError, actor_from_spec, document_tokens
from .library import SkillLibrary
from .library_env import FAMILIES, GRAMMAR, SEEDED_TASKS, _Expert
from .reflector import distilled_skill, render_trajectory
from .skill import DEFAULT_TOKEN_BUDGET, Skill, SkillFormatError, parse_skill_md
from .utility import Episode, OverContext, ProbeRunner, Utility, accept, measure_utility, run_episode, split_tasks

PROMPT_SKILL = "system-prompt"
INVALID_PENALTY = -1.0
DONE = "DONE"


class ReflectEnv(BoundedReturn, TextEnv):
    """A reflector rewrites the actor's document; rewarded by the document's paired held-out utility."""

    system_prompt: ClassVar[str] = (
        "You improve the instructions an agent (the actor) follows. Each turn, reply with the WHOLE document "
        "the actor will get next: a system prompt in plain text, or one SKILL.md (YAML front matter with name "
        "and description, then a Markdown body). Write general procedures, not the shown tasks' answers: the "
        "reward is how much your new document raises the actor's return over the previous one on held-out "
        "tasks you never see. Reply DONE when you cannot improve it."
    )
    reward_bounds: ClassVar[tuple[float, float]] = (-1.0, 1.0)
    invalid_action_penalty: ClassVar[float] = INVALID_PENALTY
    #: Under react/tags/tool_calls the protocol says how to reply; the action is still the whole document.
    reply_format: ClassVar[dict[str, str]] = {
        "Each turn, reply with the WHOLE document": "Each turn, your action is the WHOLE document",
        "Reply DONE when you cannot improve it.": f"The action {DONE} ends the episode when you cannot improve it.",
        "reply with the whole document each turn": "your action each turn is the whole document",
        f"Reply with the whole new document, or {DONE}.": f"Your action: the whole new document, or {DONE}.",
    }
    max_action_chars: ClassVar[int] = 262_144
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_runner", "actor")  # static: a model actor never pickles

    def __init__(
        self, family: str = "household-heat", *, actor: Actor | str | None = None, n_probes: int = 8, n_shown: int = 2,
        max_rounds: int = 3, initial: str = "", token_budget: int = DEFAULT_TOKEN_BUDGET, render_mode: str | None = None,
    ):
        super().__init__(render_mode=render_mode)
        if n_probes < 2 or n_shown < 1 or max_rounds < 1:
            raise ValueError(f"expected n_probes >= 2, n_shown >= 1 and max_rounds >= 1, got {n_probes}, {n_shown}, "
                             f"{max_rounds}")
        if family not in FAMILIES or FAMILIES[family].code_skills:
            usable = [name for name, spec in FAMILIES.items() if not spec.code_skills]
            raise ValueError(f"family must be one of {', '.join(usable)}, got {family!r}")
        self.family, self._spec = family, FAMILIES[family]
        self.actor: Actor = actor_from_spec(actor) if actor is not None else ProcedureActor()
        self.n_probes, self.n_shown, self.max_rounds = n_probes, n_shown, max_rounds
        self.token_budget = token_budget
        self.initial_text = initial
        self.initial = self._library(initial) if initial.strip() else SkillLibrary()
        self._runner = ProbeRunner(self._spec.env_id, dict(self._spec.env_kwargs))
        self._document, self._library_now = initial, self.initial
        self._shown: list[int] = []
        self._probes: list[int] = []
        self._round = 0
        self._gain = 0.0
        self._experts: list[Episode] = []

    # ----------------------------------------------------------------- episode
    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        num_tasks = int(getattr(self._runner.env.unwrapped, "num_tasks", SEEDED_TASKS))
        split_seed = int(self.np_random.integers(2**31))
        self._shown, self._probes = split_tasks(num_tasks, self.n_shown, self.n_probes, seed=split_seed)
        self._document, self._library_now = self.initial_text, self.initial
        self._round, self._gain = 0, 0.0
        env = self._runner.env
        self._experts = self._ours(lambda: [run_episode(env, _Expert(env), task, task) for task in self._shown])
        instruction = (f"Write the document an actor follows on {self._spec.env_id}: reply with the whole document each "
                       f"turn (at most {self.max_rounds}), or {DONE}.")
        return self._observation("Start."), {"instruction": instruction}

    def _step(self, action: str) -> Step:
        if action.strip().upper() == DONE:
            return Step("Done.", terminated=True, info=self._round_info())
        self._round += 1
        over = self._round >= self.max_rounds
        try:
            library = self._library(action)
            utility = self._measure(library)
        except (SkillFormatError, OverContext) as e:
            return self._refused(e, over)
        self._document, self._library_now = action, library
        self._gain += utility.U
        observation = self._observation(self._summary(utility))
        info = {**self._round_info(), "utility": utility.to_info(), "accepted": accept(utility)}
        return Step(observation, reward=utility.U, terminated=over, won=self._gain > 1e-12, score=self._gain, info=info)

    def _refused(self, error: SkillFormatError | OverContext, over: bool) -> Step:
        """A document that breaks the format or the budget, or that the actor cannot read whole: −1, unchanged."""
        reason = f"it does not fit the actor's context ({error})" if isinstance(error, OverContext) else str(error)
        if over:  # the last round is spent on it: the episode ends, still with the penalty
            return Step(f"Invalid document ({reason}); no rounds left.", reward=INVALID_PENALTY, terminated=True,
                        info={**self._round_info(), "action_valid": False, "parse_error": reason})
        raise InvalidAction(f"Invalid document: {reason}. The document is unchanged; send a corrected one.",
                            penalty=INVALID_PENALTY) from None

    def _measure(self, library: SkillLibrary) -> Utility:
        """U on the probes, and the actor's play on the shown tasks for the next observation (cached); either
        overflowing the actor's context with the new document (and not the old) is :class:`OverContext`."""
        def play() -> Utility:
            utility = measure_utility(self._runner, self._library_now, library, self._probes, self.actor,
                                      shown=self._shown)
            try:
                self._runner.arm(library, self._shown, self._shown, self.actor)
            except ActorContextError as e:  # the old document's shown arm was played already: the new one did it
                raise OverContext(str(e)) from e
            return utility

        return self._ours(play)

    def _ours(self, play: Callable[[], Any]) -> Any:
        """Run ``play`` (episodes of the base env and the actor); their failures are our machinery's, never the
        document's: the actor sees the document as text, and any text is a document."""
        try:
            return play()
        except (InfraError, OverContext):  # OverContext: the new document's doing, sorted by _step
            raise
        except Exception as e:  # noqa: BLE001 — a base env or actor (a model server) that crashed
            raise InfraError(f"playing {self._spec.env_id} with the actor failed: {type(e).__name__}: {e}") from e

    def _library(self, text: str) -> SkillLibrary:
        """The one-skill library the actor is shown for ``text`` (a SKILL.md, or a plain-text prompt); its body
        within ``token_budget`` by the rule and by the actor's own tokenizer (:func:`document_tokens`)."""
        body = text.strip("\n")
        if body.lstrip().startswith("---"):
            skill = parse_skill_md(body.lstrip() + "\n", token_budget=self.token_budget)
        else:
            skill = Skill(PROMPT_SKILL, "The reflector's instructions for the actor (agentgym/Reflect-v0).", body=body + "\n")
        tokens = document_tokens(self.actor, skill.body)
        if tokens > self.token_budget:
            raise SkillFormatError(f"expected a document of at most {self.token_budget} tokens (counted by the rule "
                                   f"and the actor's own tokenizer), got {tokens}; shorten it")
        return SkillLibrary([skill])

    # ----------------------------------------------------------------- observation
    def _observation(self, headline: str) -> str:
        shown, _ = self._ours(lambda: self._runner.arm(self._library_now, self._shown, self._shown, self.actor))
        trajectories = [("expert", episode) for episode in self._expert_episodes()] + [("actor", e) for e in shown]
        parts = [headline, f"# The actor's document for {self._spec.env_id} (round {self._round} of {self.max_rounds})",
                 GRAMMAR, "## Current document", "<document>", self._document or "(empty: the actor's weak default)", "</document>",
                 "## Trajectories from training tasks (the expert's, then the actor's with the current document)"]
        parts += [render_trajectory(i, who, episode) for i, (who, episode) in enumerate(trajectories, 1)]
        parts.append(f"Reply with the whole new document, or {DONE}.")
        return "\n\n".join(parts)

    def _expert_episodes(self) -> list[Episode]:
        """The base env's scripted expert on the shown training tasks (what a reflector may distil)."""
        return list(self._experts)

    @staticmethod
    def _summary(u: Utility) -> str:
        verdict = "accepted" if accept(u) else "not accepted"
        return (f"Measured on {u.n} held-out probes: U = {u.U:+.3f} (sd {u.sd:.3f}; {verdict}); mean return "
                f"{u.base_mean:.3f} -> {u.op_mean:.3f}; {u.fixed} probes fixed, {u.regressions} broken.")

    def _round_info(self) -> dict[str, Any]:
        return {"round": self._round, "document_tokens": document_tokens(self.actor, self._document)}

    # ----------------------------------------------------------------- hooks
    def expert_action(self) -> str:
        """The scripted reflector: once, the SKILL.md of the procedures distilled from the shown expert
        trajectories (:func:`~meta_envs.skills.reflector.distilled_skill`); then ``DONE``."""
        skill = distilled_skill(self._experts) if self._round == 0 else None
        return skill.to_skill_md() if skill is not None else DONE

    def close(self) -> None:
        self._runner.close()
        super().close()
