"""Measured utility of a library change: paired, held out, with common random numbers.

The utility of going from library ``L`` to ``L ⊕ op`` is measured, never judged:

    U = (1/n) Σ_i [R(L ⊕ op, i) − R(L, i)]

over ``n`` held-out probe tasks ``i``, where ``R`` is the episode return of the actor on the base env with
the library shown in its system prompt (:func:`~meta_envs.skills.showing.with_skills`, ``all`` by
default: every body). Both arms run on the *same*
task index and the same seed (env and actor RNG: common random numbers), so a change that alters no
action gives a difference of exactly 0 on every probe. ``sd`` is the sample standard deviation of the
per-probe differences; ``regressions`` counts probes solved (``won``) under ``L`` and not under ``L ⊕ op``,
``fixed`` the reverse. The baseline arm depends only on ``L``'s version, the probes, seeds and actor, so
it is cached per library version (:class:`ArmCache`): a measurement of k operations on one library costs
k + 1 arms, not 2k.

:func:`accept` is the gate: ``U − sd/√n > 0`` and ``regressions ≤ 0.1·n``.

Probes must be disjoint from the tasks whose trajectories were shown to whoever wrote the operation;
:func:`split_tasks` draws the two sets apart, and :func:`measure_utility` refuses overlapping ones.
"""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium

from agentgym_envs.core.errors import AgentGymError, InfraError

from .actor import Actor
from .model_actor import ActorContextError
from .library import SkillLibrary
from .showing import with_skills

#: Observations kept per step of an episode (for trajectories shown to a reflector).
KEPT_OBSERVATION_CHARS = 1_000
#: Accept only if regressions are at most this share of the probes.
MAX_REGRESSION_SHARE = 0.1


class UtilityError(AgentGymError, ValueError):
    """A utility measurement was asked for with inconsistent probes or seeds."""


class OverContext(AgentGymError):
    """The changed library made the actor's prompt exceed its model's context while the unchanged one fit:
    the change's outcome (the reflector's), not infrastructure."""


@dataclass(frozen=True)
class Episode:
    """One arm's episode on one probe: return, whether it was won, steps, and the actions taken."""

    task_index: int
    seed: int
    ret: float
    won: bool
    steps: int
    actions: tuple[str, ...] = ()
    instruction: str = ""
    observations: tuple[str, ...] = ()
    """The first observation and the one after each action, each cut to :data:`KEPT_OBSERVATION_CHARS`."""


@dataclass(frozen=True)
class Utility:
    """The paired measurement of one operation (see the module docstring)."""

    U: float
    sd: float
    n: int
    regressions: int
    fixed: int
    per_probe: tuple[tuple[int, int, float, float], ...]
    """``(task_index, seed, R(L, i), R(L ⊕ op, i))`` per probe."""
    base_mean: float
    op_mean: float
    base_cached: bool = False

    @property
    def lower(self) -> float:
        """``U − sd/√n``: what :func:`accept` needs above 0."""
        return self.U - self.sd / math.sqrt(self.n)

    def to_info(self) -> dict[str, Any]:
        """JSON-able summary (for an env's info)."""
        return {"U": self.U, "sd": self.sd, "n": self.n, "lower": self.lower, "regressions": self.regressions,
                "fixed": self.fixed, "base_mean": self.base_mean, "op_mean": self.op_mean,
                "per_probe": [list(p) for p in self.per_probe]}


def accept(u: Utility, *, max_regression_share: float = MAX_REGRESSION_SHARE) -> bool:
    """Whether the operation goes into the library: ``U − sd/√n > 0`` and regressions ≤ 0.1·n."""
    return u.lower > 0 and u.regressions <= max_regression_share * u.n


def split_tasks(num_tasks: int, shown: int, probes: int, *, seed: int = 0) -> tuple[list[int], list[int]]:
    """Two disjoint sets of task indices drawn with a fixed seed: ``shown`` for trajectories, then ``probes``."""
    if shown + probes > num_tasks:
        raise UtilityError(f"expected shown + probes <= {num_tasks} tasks, got {shown} + {probes}; ask for fewer")
    order = random.Random(seed).sample(range(num_tasks), shown + probes)
    return sorted(order[:shown]), sorted(order[shown:])


def run_episode(env: gymnasium.Env, actor: Actor, task_index: int, seed: int) -> Episode:
    """Play one episode of ``env`` (a base env wrapped by ``with_skills``) on ``task_index``; the actor
    sees the reset info's ``system_prompt``, where the skills are."""
    observation, info = env.reset(seed=seed, options={"task_index": task_index})
    actor.reset(instruction=str(info.get("instruction", "")), system_prompt=str(info.get("system_prompt", "")), seed=seed)
    instruction = str(info.get("instruction", ""))
    ret, actions, observations, done = 0.0, [], [observation[:KEPT_OBSERVATION_CHARS]], False
    while not done:
        action = actor.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
        ret, done = ret + float(reward), terminated or truncated
        actions.append(action)
        observations.append(observation[:KEPT_OBSERVATION_CHARS])
        if info.get("infra_error"):  # the base env's machinery failed: no measurement, and not the op's fault
            raise InfraError(f"the base env failed on probe task {task_index} (seed {seed}): {info['infra_error']}")
    return Episode(task_index, seed, ret, bool(info.get("won", False)), len(actions), tuple(actions),
                   instruction, tuple(observations))


@dataclass
class ArmCache:
    """Arms (episode lists) by (env, kwargs, library version, probes, seeds, actor); least recently used out."""

    capacity: int = 256
    _arms: OrderedDict[tuple, tuple[Episode, ...]] = field(default_factory=OrderedDict)
    hits: int = 0

    def get(self, key: tuple) -> tuple[Episode, ...] | None:
        arm = self._arms.get(key)
        if arm is not None:
            self._arms.move_to_end(key)
            self.hits += 1
        return arm

    def put(self, key: tuple, arm: tuple[Episode, ...]) -> None:
        self._arms[key] = arm
        self._arms.move_to_end(key)
        while len(self._arms) > self.capacity:
            self._arms.popitem(last=False)


@dataclass
class ProbeRunner:
    """Plays arms on one base env (made once) and caches them by library version."""

    base_env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    retrieval: str = "all"
    code_skills: bool = False
    """Install the library's ``kind: code`` skills into each episode's sandbox (Terminal)."""
    cache: ArmCache = field(default_factory=ArmCache)
    _env: gymnasium.Env | None = None

    @property
    def env(self) -> gymnasium.Env:
        if self._env is None:
            self._env = gymnasium.make(self.base_env_id, **self.env_kwargs)
        return self._env

    def arm(self, library: SkillLibrary, probes: Sequence[int], seeds: Sequence[int], actor: Actor) -> tuple[tuple[Episode, ...], bool]:
        """The episodes of ``library`` on the probes, and whether they came from the cache."""
        key = (self.base_env_id, repr(sorted(self.env_kwargs.items())), self.retrieval, library.version, tuple(probes),
               tuple(seeds), getattr(actor, "name", type(actor).__name__))
        cached = self.cache.get(key)
        if cached is not None:
            return cached, True
        env = self.env
        if self.code_skills:
            from .code_skills import WithCodeSkills

            env = WithCodeSkills(env, library)
        shown = with_skills(env, library, self.retrieval)
        arm = tuple(run_episode(shown, actor, i, s) for i, s in zip(probes, seeds))
        self.cache.put(key, arm)
        return arm, False

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


def measure_utility(base_env_id: str | ProbeRunner, library: SkillLibrary, op_library: SkillLibrary,
                    probes: Sequence[int], actor: Actor, *, seeds: Sequence[int] | None = None,
                    shown: Sequence[int] = (), env_kwargs: dict[str, Any] | None = None) -> Utility:
    """U of ``library → op_library`` on ``probes`` (task indices) with ``seeds`` (one per probe; default the
    probe's index), both arms on the same seeds. ``base_env_id`` may be a :class:`ProbeRunner` to share
    its env and baseline cache across measurements. ``shown``: task indices whose trajectories were shown;
    overlapping probes raise :class:`UtilityError`. The actor's prompt over its context with ``op_library`` (and
    not with ``library``) raises :class:`OverContext`: the change made it so."""
    probes = [int(i) for i in probes]
    seeds = list(probes) if seeds is None else [int(s) for s in seeds]
    if not probes or len(seeds) != len(probes):
        raise UtilityError(f"expected one seed per probe and at least one probe, got {len(probes)} probes and {len(seeds)} seeds")
    if overlap := sorted(set(probes) & {int(i) for i in shown}):
        raise UtilityError(f"expected probes disjoint from the shown tasks, got {overlap[:5]} in both; use split_tasks")
    runner = base_env_id if isinstance(base_env_id, ProbeRunner) else ProbeRunner(base_env_id, dict(env_kwargs or {}))
    try:
        base, cached = runner.arm(library, probes, seeds, actor)  # over the context here: not the change's doing
        try:
            op, _ = runner.arm(op_library, probes, seeds, actor)
        except ActorContextError as e:
            raise OverContext(str(e)) from e
    finally:
        if not isinstance(base_env_id, ProbeRunner):
            runner.close()
    return _paired(base, op, cached)


def _paired(base: Sequence[Episode], op: Sequence[Episode], cached: bool) -> Utility:
    diffs = [o.ret - b.ret for b, o in zip(base, op)]
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    return Utility(
        U=mean, sd=sd, n=n,
        regressions=sum(b.won and not o.won for b, o in zip(base, op)),
        fixed=sum(o.won and not b.won for b, o in zip(base, op)),
        per_probe=tuple((b.task_index, b.seed, b.ret, o.ret) for b, o in zip(base, op)),
        base_mean=sum(b.ret for b in base) / n, op_mean=sum(o.ret for o in op) / n, base_cached=cached,
    )
