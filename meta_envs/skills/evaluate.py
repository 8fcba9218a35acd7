"""The three conditions of SkillsBench on our envs: no skills, curated skills, self-generated skills.

For each family (``household``, ``webshop``, ``search`` by default; any key of
:data:`~meta_envs.skills.library_env.FAMILIES` that has a curated library) the same actor plays the same
held-out tasks three times:

* ``none`` — an empty library (the actor's own default);
* ``curated`` — the family's library written here (``meta_envs/skills/curated/<family>/``);
* ``self-generated`` — the library a reflector built in one ``agentgym/SkillLibrary-v0`` episode on the family
  (by default the scripted reflector, its ``expert_action``: it distils the expert's trajectories on the
  episode's shown training tasks into procedures; a model reflects through :class:`PolicyReflector`), where
  only operations whose measured utility passed the gate entered the library.

The evaluation tasks are drawn (seeded) from the family's task set *outside* both the reflector's shown tasks
and its probe tasks, so the self-generated condition is held out twice: from what its author saw and from what
accepted its skills. Skills are shown with ``retrieval`` (a ``reflector_kwargs`` key, as in SkillLibrary-v0:
``all`` by default, ``bm25``, ``index``), the same in the reflector's episode and in the evaluation. Every
condition plays the same task indices with the same seeds (common random numbers), so ``delta`` — the paired
mean return difference to ``none``, with its 95% normal interval — compares the conditions on identical
episodes. Success is ``won``, with a Wilson 95% interval
(:func:`agentgym_envs.stats.wilson`).

``agentgym skills eval`` (``meta_envs/cli/skills.py``) runs this and prints :meth:`EvalReport.to_markdown`;
the table in docs/meta_envs.md is that command's output.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from agentgym_envs.core.errors import InfraError
from agentgym_envs.stats import Z95, wilson

from .actor import Actor, ProcedureActor
from .library import SkillLibrary
from .library_env import FAMILIES, SEEDED_TASKS, SkillLibraryEnv
from .utility import Episode, ProbeRunner

CURATED_ROOT = Path(__file__).parent / "curated"
CONDITIONS = ("none", "curated", "self-generated")
DEFAULT_FAMILIES = ("household", "webshop", "search")


@dataclass(frozen=True)
class ConditionResult:
    """One family under one condition: successes on the evaluation tasks, the mean return, the paired delta."""

    family: str
    condition: str
    env_id: str
    successes: int
    n: int
    mean_return: float
    delta: float
    """Paired mean return difference to the ``none`` condition on the same tasks and seeds."""
    delta_half_width: float
    skills: tuple[str, ...]
    library_version: str

    @property
    def rate(self) -> float:
        return self.successes / self.n

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.successes, self.n)


@dataclass(frozen=True)
class EvalReport:
    """Every (family, condition) row and the settings that produced them (JSON-able via :meth:`to_dict`)."""

    rows: tuple[ConditionResult, ...]
    settings: dict[str, Any] = field(default_factory=dict)

    def row(self, family: str, condition: str) -> ConditionResult:
        return next(r for r in self.rows if r.family == family and r.condition == condition)

    def to_dict(self) -> dict[str, Any]:
        rows = [{**asdict(r), "skills": list(r.skills), "rate": r.rate, "interval": list(r.interval)} for r in self.rows]
        return {"settings": dict(self.settings), "rows": rows}

    def to_markdown(self) -> str:
        """The three-condition table: success with Wilson 95% intervals, mean return, paired delta to none."""
        lines = ["| family | base env | condition | skills | success | 95% interval | mean return | Δ return vs none (95%) |",
                 "|---|---|---|---|---|---|---|---|"]
        for r in self.rows:
            low, high = r.interval
            delta = "—" if r.condition == "none" else f"{r.delta:+.3f} ± {r.delta_half_width:.3f}"
            lines.append(f"| {r.family} | `{r.env_id}` | {r.condition} | {len(r.skills)} | {r.successes}/{r.n} = {r.rate:.2f} | "
                         f"[{low:.2f}, {high:.2f}] | {r.mean_return:.3f} | {delta} |")
        return "\n".join(lines)


def curated_library(family: str) -> SkillLibrary:
    """The curated library of ``family``: ``curated/<family>/`` (``household-heat`` → ``household``'s)."""
    folder = CURATED_ROOT / ("household" if family.startswith("household") else family)
    if not folder.is_dir():
        have = sorted(p.name for p in CURATED_ROOT.iterdir() if p.is_dir())
        raise ValueError(f"expected a family with a curated library ({', '.join(have)}), got {family!r}")
    return SkillLibrary.load(folder)


class PolicyReflector:
    """An agentgym :class:`~agentgym_envs.policies.base.Policy` (the tiny model, ``hf:``, ``vllm:``, ``openai:``)
    as the reflector of the self-generated condition: each operation is one completion of SkillLibrary-v0's
    system prompt and its latest observation (which holds the trajectories, the index and the last result).
    The sampler's seed moves on with each call, so a run is reproducible."""

    def __init__(self, policy: Any, sampling: Any = None, name: str = "policy"):
        from agentgym_envs.policies.base import SamplingConfig

        self.policy, self.name, self.calls = policy, name, 0
        self.sampling = sampling or SamplingConfig(temperature=0.0, max_new_tokens=1024)

    def __call__(self, observation: str) -> str:
        messages = [{"role": "system", "content": SkillLibraryEnv.system_prompt}, {"role": "user", "content": observation}]
        sampling = replace(self.sampling, seed=(self.sampling.seed or 0) + self.calls)
        self.calls += 1
        text = self.policy.act([messages], sampling=sampling)[0].text
        return text if isinstance(text, str) else ""


def self_generated_library(family: str, *, seed: int = 0, actor: Actor | None = None, reflector: Any = None,
                           **env_kwargs: Any) -> tuple[SkillLibrary, list[int]]:
    """The library one ``SkillLibrary-v0`` episode ends with, and the task indices it used (shown + probes).

    ``reflector`` maps an observation to an action; ``None`` is the env's scripted reflector (``expert_action``).
    """
    env = SkillLibraryEnv(family=family, actor=actor, **env_kwargs)
    try:
        observation, _ = env.reset(seed=seed)
        done = False
        while not done:
            action = env.expert_action() if reflector is None else reflector(observation)
            observation, _, terminated, truncated, info = env.step(action)
            if info.get("infra_error"):
                raise InfraError(f"the {family} reflector episode failed on our side: {info['infra_error']}")
            done = terminated or truncated
        return env.library, sorted(set(env.shown) | set(env.probes))
    finally:
        env.close()


def evaluation_tasks(num_tasks: int, used: Sequence[int], n: int, *, seed: int) -> list[int]:
    """``n`` task indices drawn with ``seed`` from those not in ``used``."""
    free = sorted(set(range(num_tasks)) - set(used))
    if len(free) < n:
        raise ValueError(f"expected at least {n} unused tasks, got {len(free)}; ask for fewer")
    return sorted(random.Random(seed).sample(free, n))


def evaluate_family(family: str, *, n: int = 50, seed: int = 0, actor: Actor | None = None,
                    reflector: Any = None, reflector_kwargs: dict[str, Any] | None = None,
                    ) -> tuple[list[ConditionResult], SkillLibrary]:
    """The three conditions on ``family`` (see the module docstring), and the self-generated library."""
    actor = actor if actor is not None else ProcedureActor()
    spec, kwargs = FAMILIES[family], dict(reflector_kwargs or {})
    retrieval = kwargs.get("retrieval", "all")  # evaluated as the reflector's episode measured: shown alike
    runner = ProbeRunner(spec.env_id, dict(spec.env_kwargs), retrieval=retrieval, code_skills=spec.code_skills)
    try:
        num_tasks = getattr(runner.env.unwrapped, "num_tasks", SEEDED_TASKS)
        reserved = kwargs.get("n_probes", 16) + kwargs.get("n_shown", 4)  # SkillLibrary-v0's defaults
        if num_tasks - reserved < n:  # refuse before the reflector's episode, not after it
            raise ValueError(f"expected at least {n} unused tasks in {spec.env_id}, got {num_tasks} minus the "
                             f"reflector's {reserved}; ask for fewer")
        generated, used = self_generated_library(family, seed=seed, actor=actor, reflector=reflector, **kwargs)
        libraries = {"none": SkillLibrary(), "curated": curated_library(family), "self-generated": generated}
        tasks = evaluation_tasks(num_tasks, used, n, seed=seed)
        arms = {name: runner.arm(lib, tasks, tasks, actor)[0] for name, lib in libraries.items()}
    finally:
        runner.close()
    return [_result(family, spec.env_id, name, libraries[name], arms[name], arms["none"]) for name in CONDITIONS], generated


def _result(family: str, env_id: str, condition: str, library: SkillLibrary, arm: Sequence[Episode],
            none: Sequence[Episode]) -> ConditionResult:
    n = len(arm)
    diffs = [a.ret - b.ret for a, b in zip(arm, none)]
    mean_diff = sum(diffs) / n
    sd = math.sqrt(sum((d - mean_diff) ** 2 for d in diffs) / (n - 1)) if n > 1 else 0.0
    return ConditionResult(family, condition, env_id, sum(e.won for e in arm), n, sum(e.ret for e in arm) / n, mean_diff,
                           Z95 * sd / math.sqrt(n), tuple(library.names()), library.version)


def evaluate(families: Sequence[str] = DEFAULT_FAMILIES, *, n: int = 50, seed: int = 0, actor: Actor | None = None,
             reflector: Any = None, reflector_kwargs: dict[str, Any] | None = None,
             save_dir: str | Path | None = None) -> EvalReport:
    """The three-condition table over ``families``, ``n`` held-out tasks each; ``save_dir`` keeps each family's
    self-generated library as ``<save_dir>/<family>/`` (a library folder anyone can read, diff and load)."""
    for family in families:  # every refusal before any work
        if family not in FAMILIES:
            raise ValueError(f"expected a family of {', '.join(FAMILIES)}, got {family!r}")
        curated_library(family)
    rows: list[ConditionResult] = []
    for family in families:
        results, generated = evaluate_family(family, n=n, seed=seed, actor=actor, reflector=reflector,
                                             reflector_kwargs=reflector_kwargs)
        rows += results
        if save_dir is not None:
            generated.save(Path(save_dir) / family)
    actor_name = getattr(actor, "name", "procedure") if actor is not None else "procedure"
    reflector_name = getattr(reflector, "name", "reflector") if reflector is not None else "scripted"
    settings = {"families": list(families), "n": n, "seed": seed, "actor": actor_name, "reflector": reflector_name,
                "reflector_kwargs": dict(reflector_kwargs or {})}
    return EvalReport(tuple(rows), settings)
