"""``agentgym/SkillLibrary-v0``: the reflector manages a skill library, and each operation's utility is measured.

Arguments (``gymnasium.make`` kwargs): ``family`` (a key of :data:`FAMILIES`: ``household`` or one task
type ``household-heat`` …, ``webshop``, ``search`` (one-hop questions), ``puzzles`` (Hanoi), ``terminal``),
``actor`` (an :class:`~meta_envs.skills.actor.Actor` or a spec: ``procedure``, the default, or a model spec
such as ``hf:tiny`` / ``vllm:<dir>`` / ``openai:<url>#<model>``; :func:`~meta_envs.skills.model_actor.actor_from_spec`), ``n_probes`` (16), ``n_shown`` (4 training tasks whose
trajectories are shown), ``library`` (the starting :class:`~meta_envs.skills.library.SkillLibrary` or a path
to one; default empty), ``max_ops`` (4), ``token_budget`` (5000), ``backend`` (``bwrap``: where code
skills' tests run), ``retrieval`` (how the actor is shown the library: ``all`` bodies, the default;
``bm25`` top-3 by the instruction; ``index`` for actors that call ``read_skill``; see
:func:`~meta_envs.skills.showing.with_skills`).

Episode: ``reset(seed=s)`` draws ``n_shown`` training tasks and ``n_probes`` held-out probe tasks, disjoint
(:func:`~meta_envs.skills.utility.split_tasks` with a seed from ``self.np_random``). The observation is a brief:
the procedure grammar the actor follows, the operations, the library's index, and for each shown task the
expert's trajectory (a success) and the actor's with the current library (often a failure). Each step is
one operation (:mod:`~meta_envs.skills.operations`); after ``max_ops`` operations or ``DONE`` the episode ends.

Reward of an operation ``L → L ⊕ op`` (``U``, ``sd``, ``n``, regressions: :mod:`~meta_envs.skills.utility`)::

    r = U − 0.5 · regressions / n − 0.1 · max(0, tokens − 800) / 1000

where ``tokens`` is the body length of the skill the operation writes (0 for REMOVE). The operation enters
the library only if ``accept``: ``U − sd/√n > 0`` and ``regressions ≤ 0.1·n``; otherwise the library stays
and the operation earns ``min(r, 0)``: only accepted changes earn, so resending a rejected operation with a
positive ``U`` farms nothing, while a harmful one still pays its negative ``r``.
``KEEP`` and ``DONE`` earn 0 and measure nothing. An action that is no applicable operation (an unknown verb,
a malformed SKILL.md, a name not in the library, a body over ``token_budget`` by the rule or by the actor's
own tokenizer when it has one, a change with which the actor's prompt no longer fits its model's context) is
``action_valid=False``, reward −1, and still counts as an operation. Every reward is cut so the episode's
return stays inside ``reward_bounds`` = (−2, 1) (:mod:`meta_envs.bounded_return`): two invalid operations
reach the floor, and further losses are then free (``info["reward_uncut"]`` says what was cut). A ``kind: code`` skill (Terminal) must pass the tests it brings, run in a sandbox, before
its utility is measured; failing them is reward −1 (``info["code_skill"]`` says why). Our sandbox, a base
env or the actor (a model server) failing on its own is ``info["infra_error"]`` (the episode is truncated,
reward 0).

Info keys on each step: ``operation`` (the verb, or ``None`` when unparseable), ``accepted``, ``utility``
(:meth:`~meta_envs.skills.utility.Utility.to_info`, or ``None`` when nothing was measured),
``reward_components`` (``U``, ``regression_term``, ``token_term``, ``tokens``, ``withheld``: the positive
part a rejected operation was not paid), ``library`` (skill names
after the step), plus ``code_skill`` for code skills. ``won``: some operation was accepted this episode;
``score``: the sum of the accepted operations' ``U`` (how much the library gained, as measured). ``metrics``: ``operations``, ``skills``,
``library_tokens``, ``accepted``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agentgym_envs.core import InfraError, Step, TextEnv

from ..bounded_return import BoundedReturn
from .actor import Actor, ProcedureActor
from .model_actor import actor_from_spec, document_tokens
from .library import SkillLibrary
from .operations import Operation, OperationError, apply_operation, parse_operation
from .reflector import distil_action, render_trajectory
from .skill import DEFAULT_TOKEN_BUDGET, Skill
from .utility import Episode, OverContext, ProbeRunner, Utility, accept, measure_utility, run_episode, split_tasks

FREE_TOKENS = 800
INVALID_REWARD = -1.0


@dataclass(frozen=True)
class Family:
    """A base env for skill learning: its id, make kwargs, and whether its skills may be code skills."""

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    code_skills: bool = False


FAMILIES: dict[str, Family] = {
    "household": Family("agentgym/Household-v0"),
    **{f"household-{v.lower()}": Family(f"agentgym/Household-{v}-v0")
       for v in ("PickPlace", "Examine", "Clean", "Heat", "Cool", "PickTwo")},
    "webshop": Family("agentgym/WebShop-v0"),
    "search": Family("agentgym/Search-1Hop-v0"),
    "puzzles": Family("agentgym/Hanoi-Easy-v0"),
    "terminal": Family("agentgym/Terminal-v0", code_skills=True),
}
#: Task ids drawn from this many seeds where the base env has no task set (puzzles).
SEEDED_TASKS = 10_000

GRAMMAR = """The actor follows the first skill whose `Task:` pattern matches its instruction, step by step:
- `Task: put a hot {obj} in {target}.` binds {obj}, {target} from the instruction.
- `1. take {obj} from {place}` does the first valid action matching the template (bound values may carry
  an instance number: `apple` matches `apple 1`); with no match, a fully bound step is sent literally.
- `2. open {target} if possible` is skipped unless a valid action matches.
- `3. repeat open {place} or go to {place} until you can take {obj} from {place}` loops over new actions.
- `4. note {x} from: <pattern with {x}>` reads {x} from the last observation.
Placeholder types: {x:number}, {x:id}, {x:Name}, {x:task} (text in the instruction), {x:other}.
After its steps, or with no matching skill, the actor acts at random."""

OPERATIONS = """One operation per reply (at most {max_ops} in all):
ADD + a whole SKILL.md on the next lines | EDIT <name> + SKILL.md | REMOVE <name> | MERGE <a> <b> [+ SKILL.md]
| KEEP | DONE. SKILL.md: `---`, `name:` (lowercase, digits, single hyphens), `description:`, `---`, body.
Reward: measured utility on held-out tasks, U - 0.5*regressions/n - 0.1*max(0, tokens - 800)/1000; accepted
into the library only if U - sd/sqrt(n) > 0 and at most 10% of probes regress, and a rejected operation earns
at most 0. Invalid operations: -1."""


class SkillLibraryEnv(BoundedReturn, TextEnv):
    """The library-management meta-env; see the module docstring."""

    system_prompt: ClassVar[str] = (
        "You maintain a library of skills (SKILL.md files) for an actor. Read the trajectories, then reply with "
        "one library operation per turn. Operations are judged by their measured effect on held-out tasks.")
    reward_bounds: ClassVar[tuple[float, float]] = (-2.0, 1.0)
    invalid_action_penalty: ClassVar[float] = INVALID_REWARD
    #: Under react/tags/tool_calls the protocol says how to reply; an action is still one operation.
    reply_format: ClassVar[dict[str, str]] = {
        "then reply with one library operation per turn.": "then send one library operation per turn.",
        "One operation per reply": "One operation per turn",
    }
    max_action_chars: ClassVar[int] = 64_000
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_runner",)

    def __init__(self, family: str = "household", actor: Actor | str | None = None, n_probes: int = 16, n_shown: int = 4,
                 library: SkillLibrary | str | os.PathLike[str] | None = None, max_ops: int = 4,
                 token_budget: int = DEFAULT_TOKEN_BUDGET, backend: str = "bwrap", retrieval: str = "all",
                 render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")
        if n_probes < 2 or n_shown < 1 or max_ops < 1:
            raise ValueError(f"expected n_probes >= 2, n_shown >= 1, max_ops >= 1, got {n_probes}, {n_shown}, {max_ops}")
        self.family, self.n_probes, self.n_shown, self.max_ops = family, n_probes, n_shown, max_ops
        if retrieval not in ("all", "bm25", "index"):
            raise ValueError(f"retrieval must be 'all', 'bm25' or 'index', got {retrieval!r}")
        self.token_budget, self.backend, self.retrieval = token_budget, backend, retrieval
        self.actor: Actor = actor_from_spec(actor) if actor is not None else ProcedureActor()
        if library is None or isinstance(library, SkillLibrary):
            self.initial_library = library or SkillLibrary()
        else:
            self.initial_library = SkillLibrary.load(library, token_budget=token_budget)
        self._runner: ProbeRunner | None = None
        self.library = self.initial_library
        self.shown: list[int] = []
        self.probes: list[int] = []
        self.trajectories: list[tuple[str, Episode]] = []  # (who, episode)
        self.operations = 0
        self.accepted = 0
        self.gain = 0.0  # sum of U over accepted operations: the episode's score

    # ----------------------------------------------------------------- episode
    @property
    def runner(self) -> ProbeRunner:
        """The base env and the baseline-arm cache (made on first use, kept across episodes)."""
        if self._runner is None:
            spec = FAMILIES[self.family]
            self._runner = ProbeRunner(spec.env_id, dict(spec.env_kwargs), retrieval=self.retrieval,
                                       code_skills=spec.code_skills)
        return self._runner

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.library, self.operations, self.accepted, self.gain = self.initial_library, 0, 0, 0.0
        num_tasks = getattr(self.runner.env.unwrapped, "num_tasks", SEEDED_TASKS)
        split_seed = int(self.np_random.integers(2**31))
        self.shown, self.probes = split_tasks(num_tasks, self.n_shown, self.n_probes, seed=split_seed)
        self.trajectories = []
        for task in self.shown:
            self.trajectories.append(("expert", self._ours(lambda: run_episode(self.runner.env, _Expert(self.runner.env),
                                                                               task, task))))
            actor_arm, _ = self._ours(lambda: self.runner.arm(self.library, [task], [task], self.actor))
            self.trajectories.append(("actor", actor_arm[0]))
        return self._brief(), {"instruction": f"Improve the skill library for {FAMILIES[self.family].env_id}."}

    def _brief(self) -> str:
        parts = [f"# Skill library for {FAMILIES[self.family].env_id}", GRAMMAR, OPERATIONS.format(max_ops=self.max_ops),
                 self._index(), "## Trajectories from training tasks"]
        parts += [render_trajectory(i, who, ep) for i, (who, ep) in enumerate(self.trajectories, 1)]
        return "\n\n".join(parts)

    def _index(self) -> str:
        lines = [f"- {name}: {description}" for name, description in self.library.index()]
        return f"## Library ({len(self.library)} skills, {self.library.tokens} tokens)\n" + ("\n".join(lines) or "(empty)")

    def _step(self, action: str) -> Step:
        self.operations += 1
        done = self.operations >= self.max_ops
        try:
            op = parse_operation(action)
            new_library, skill = apply_operation(self.library, op, token_budget=self.token_budget)
            self._check_budget(skill)
        except OperationError as e:
            return self._invalid_op(str(e), done)
        if op.verb in ("KEEP", "DONE"):
            info = self._info(op.verb, None, False, None)
            return Step(f"{op.verb}: the library is unchanged.\n\n{self._index()}", 0.0,
                        terminated=done or op.verb == "DONE", info=info)
        extra: dict[str, Any] = {}
        if skill is not None and skill.kind == "code":
            report = self._check_code(skill)
            extra["code_skill"] = report.to_info()
            if not report.passed:
                info = {**self._info(op.verb, None, False, None), **extra}
                return Step(f"{op.verb} rejected: the skill's own tests did not pass ({report.detail}).\n\n{self._index()}",
                            INVALID_REWARD, terminated=done, info=info)
        try:
            return self._measured(op, new_library, skill, done, extra)
        except OverContext as e:  # with it (and not without) the actor cannot read its prompt whole
            return self._invalid_op(f"with this change the actor's prompt does not fit its context ({e})", done)

    def _check_budget(self, skill: Skill | None) -> None:
        """The written body within ``token_budget`` by the actor's own tokenizer too (:func:`document_tokens`)."""
        tokens = document_tokens(self.actor, skill.body) if skill is not None else 0
        if tokens > self.token_budget:
            raise OperationError(f"expected a body of at most {self.token_budget} tokens (counted by the rule and the "
                                 f"actor's own tokenizer), got {tokens}; shorten it")

    def _ours(self, play: Callable[[], Any]) -> Any:
        """Episodes of the base env and the actor: their failures (a crashed env, a model server gone) are our
        machinery's, ``infra_error``; only :class:`OverContext` (the change's doing) passes through."""
        try:
            return play()
        except (InfraError, OverContext):
            raise
        except Exception as e:  # noqa: BLE001 — a base env or actor (a model server) that crashed
            raise InfraError(f"playing {FAMILIES[self.family].env_id} with the actor failed: {type(e).__name__}: {e}") from e

    def _measured(self, op: Operation, new_library: SkillLibrary, skill: Skill | None, done: bool,
                  extra: dict[str, Any]) -> Step:
        u = self._ours(lambda: measure_utility(self.runner, self.library, new_library, self.probes, self.actor,
                                               shown=self.shown))
        tokens = skill.tokens if skill is not None else 0
        accepted = accept(u)
        reward, components = operation_reward(u, tokens, accepted=accepted)
        if accepted:
            self.library, self.accepted, self.gain = new_library, self.accepted + 1, self.gain + u.U
        verdict = "accepted" if accepted else "rejected"
        observation = (f"{op.verb} {' '.join(op.names)}: U = {u.U:+.3f} (sd {u.sd:.3f}, n {u.n}), {u.regressions} "
                       f"regressions, {u.fixed} fixed: {verdict}. Reward {reward:+.3f}.\n\n{self._index()}")
        info = {**self._info(op.verb, u, accepted, components), **extra}
        return Step(observation, reward, terminated=done, won=self.accepted > 0, score=self.gain, info=info)

    def _check_code(self, skill: Skill) -> Any:
        from .code_skills import check_code_skill

        report = check_code_skill(skill, backend=self.backend)
        if report.infra_error is not None:
            raise InfraError(report.infra_error)
        return report

    def _invalid_op(self, reason: str, done: bool) -> Step:
        info = {**self._info(None, None, False, None), "action_valid": False, "parse_error": reason}
        return Step(f"Invalid operation: {reason}\n\n{self._index()}", INVALID_REWARD, terminated=done, info=info)

    def _info(self, verb: str | None, u: Utility | None, accepted: bool, components: dict[str, float] | None) -> dict[str, Any]:
        return {"operation": verb, "accepted": accepted, "utility": u.to_info() if u is not None else None,
                "reward_components": components, "library": self.library.names()}

    # ----------------------------------------------------------------- contract hooks
    def expert_action(self) -> str:
        """The scripted reflector's next operation: a distilled skill for a shown expert trajectory the
        library does not cover yet, else ``DONE``."""
        return distil_action([ep for who, ep in self.trajectories if who == "expert" and ep.won], self.library)

    def metrics(self) -> dict[str, float]:
        return {"operations": float(self.operations), "skills": float(len(self.library)),
                "library_tokens": float(self.library.tokens), "accepted": float(self.accepted)}

    def state_key_material(self) -> str:
        return f"{self.family}\x1f{self.shown}\x1f{self.probes}\x1f{self.library.version}\x1f{self.operations}"

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        super().close()


def operation_reward(u: Utility, tokens: int, *, accepted: bool = True) -> tuple[float, dict[str, float]]:
    """``r = U − 0.5·regressions/n − 0.1·max(0, tokens − 800)/1000`` and its terms; a rejected operation
    earns at most 0 (``withheld``: what it was not paid), since it changed nothing and could be resent
    forever to farm its ``U`` while the library stays as it was."""
    regression_term = 0.5 * u.regressions / u.n
    token_term = 0.1 * max(0, tokens - FREE_TOKENS) / 1000
    measured = u.U - regression_term - token_term
    reward = measured if accepted else min(measured, 0.0)
    return reward, {"U": u.U, "regression_term": regression_term, "token_term": token_term, "tokens": float(tokens),
                    "withheld": measured - reward}


class _Expert:
    """The base env's scripted expert as an :class:`~meta_envs.skills.actor.Actor` (for shown trajectories)."""

    name = "expert"

    def __init__(self, env: Any):
        self.env = env

    def reset(self, *, instruction: str, system_prompt: str, seed: int) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self.env.unwrapped.expert_action()
