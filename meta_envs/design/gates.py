"""The gates a generated env module must pass before any solver plays it (``docs/meta_envs.md``).

:func:`validate_module` runs them in order and stops at the first failure. The first three only read
the source on the host (:mod:`meta_envs.design.lint`); the rest run the module inside a sandbox
(:class:`~meta_envs.design.sandboxed.SandboxedModuleEnv`), each within ``ModuleLimits.gate_budget_s``:

==================  ==================================================================================
``parse``           the source parses and defines a top-level ``class Env``
``size``            at most 32 KB
``imports``         imports only from the allow-list; no ``open``/``eval``/``getattr``/dunder climbing
``instantiate``     importing and ``Env(difficulty)`` take at most 10 s; ``max_steps`` an int in 1..100
``api``             one expert episode: every answer has the contract's types; rewards finite, in [-1, 1]
``fuzz``            every string of the hostile-action battery (``agentgym_envs.fuzz``) is answered
``determinism``     the ε-expert's trajectories are identical in two fresh processes (in separate
                    sandboxes, each with its own random ``PYTHONHASHSEED``), and on replaying a seed
``seed_sensitivity`` at least 6 of 8 seeds give distinct starts (instruction, observation, actions, hint)
``expert``          the expert wins at least 7 of 8 seeds
``baselines``       the null (empty), constant (first legal) and random policies each win at most 10%
``leak``            no run of 3 of the expert's action words in the instruction, first observation or hint
``speed``           median step at most 50 ms; every episode ended (done) within ``max_steps``
``novelty``         the injected check against the archive (passes with "no archive" when none is given)
==================  ==================================================================================

Besides the gate seeds, every policy plays the *fingerprint seeds* (``fingerprint_seeds``; by default
the novelty gate's archive's, :class:`~meta_envs.design.novelty.NoveltyGate`), interleaved with the gate
seeds in an order keyed by the host's secret, in the same processes: the expert's episodes there are the
fingerprint (``stats["fingerprint"]``, by position, :func:`~meta_envs.design.novelty.fingerprint_entry`),
taken on the same seeds for every module measured against one archive, so it compares across episodes
and host processes. A module cannot tell those seeds from gate seeds; the gates' verdicts count gate
seeds only, details never name a fingerprint seed (the designer reads them), and a gate that sweeps every
seed has its budget scaled by seeds played over gate seeds.

Thresholds scale with ``len(seeds)`` (the fractions above, rounded in the strict direction). A failure
the module caused is a failed gate (the designer's outcome); our sandbox failing to start is
``GateReport.infra_error``. Policies run on the host with their own seeded RNGs, never in the module's
process, so a module cannot weaken the baselines it is compared with.

Nothing tells a module it is being gated: the gates start it exactly as solver plays and ``Generated-v0``
do (:func:`~meta_envs.design.sandboxed.launch`), on seeds drawn like play seeds (by default
:func:`gate_seeds`, keyed by the host's secret; EnvDesign-v0 draws fresh ones per episode), and the
policies' random choices are keyed by that secret too (:func:`policy_rng`), so a module cannot predict
which policy made a move. Solver plays re-check determinism and the baselines on some of their own
seeds (:func:`meta_envs.design.solving.measure_solver`).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from agentgym_envs.fuzz import hostile_actions

from . import contract, lint
from .novelty import fingerprint_entry
from .novelty import fingerprint_seeds as archive_fingerprint_seeds
from .sandboxed import (GeneratedEnvFault, ModuleLimits, SandboxedModuleEnv, SandboxUnavailable, measured_seed,
                        open_sandbox)

GATES = ("parse", "size", "imports", "instantiate", "api", "fuzz", "determinism", "seed_sensitivity", "expert",
         "baselines", "leak", "speed", "novelty")
EPSILON = 0.25
"""The ε-expert's share of uniformly random legal actions (``p_expert_eps`` in the designer's reward)."""
MAX_MEDIAN_STEP_MS = 50.0
N_GATE_SEEDS = 8


def gate_seeds(n: int = N_GATE_SEEDS, salt: object = "default") -> list[int]:
    """``n`` gate seeds drawn like play seeds (uniform in ``[0, 2**31 - 1)``), keyed by the host's secret."""
    return [measured_seed("gate-seed", salt, i) for i in range(n)]


def policy_rng(policy: str, seed: int) -> random.Random:
    """The RNG of a host policy on ``seed``: keyed, so a module cannot replay it to tell who is playing."""
    return random.Random(measured_seed("policy", policy, int(seed)))


@dataclass(frozen=True)
class GateResult:
    name: str
    passed: bool
    detail: str
    seconds: float = 0.0


@dataclass
class GateReport:
    """The gates run, in order (the last one failed unless all passed), and what they measured."""

    gates: list[GateResult]
    stats: dict[str, Any] = field(default_factory=dict)
    infra_error: str | None = None

    @property
    def passed(self) -> bool:
        return self.infra_error is None and len(self.gates) == len(GATES) and all(g.passed for g in self.gates)

    @property
    def failed_gate(self) -> str | None:
        return next((g.name for g in self.gates if not g.passed), None)

    def to_info(self, *, timings: bool = False) -> dict[str, Any]:
        """JSON-able. Without ``timings`` it leaves out wall times so equal runs give equal info."""
        gates = [{"name": g.name, "passed": g.passed, "detail": g.detail} | ({"seconds": g.seconds} if timings else {})
                 for g in self.gates]
        stats = {k: v for k, v in self.stats.items() if timings or k != "median_step_ms"}
        return {"passed": self.passed, "failed_gate": self.failed_gate, "infra_error": self.infra_error,
                "gates": gates, "stats": stats}


class GateFailed(Exception):
    """A gate's verdict against the module (its message is the gate's detail)."""


# ----------------------------------------------------------------------------- policies (host side)
Choice = Callable[[str, list[str], str, random.Random], str]
POLICIES: dict[str, Choice] = {
    "expert": lambda obs, legal, expert, rng: expert,
    "eps_expert": lambda obs, legal, expert, rng: rng.choice(legal) if rng.random() < EPSILON else expert,
    "random": lambda obs, legal, expert, rng: rng.choice(legal),
    "null": lambda obs, legal, expert, rng: "",
    "constant": lambda obs, legal, expert, rng: legal[0],
}


@dataclass
class Episode:
    """One played episode as the gates need it."""

    ret: float
    steps: int
    ended: bool
    start: str
    trace: str
    fingerprint: dict[str, Any]
    """The expert's fingerprint entry: texts' digest and the episode's structure (:func:`fingerprint_entry`)."""
    actions: list[str]
    texts: list[str]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def play_episode(env: SandboxedModuleEnv, policy: str, seed: int) -> Episode:
    """Play one of :data:`POLICIES` from ``seed`` (its RNG keyed by policy and seed: :func:`policy_rng`)."""
    rng = policy_rng(policy, seed)
    obs = env.reset(seed)
    view = [env.instruction, obs, env.legal_actions(), env.hint()]
    texts = [env.instruction, obs, env.hint() or ""]
    trace, seen, actions, structure, total, done = [view], [[obs, len(view[2])]], [], [], 0.0, False
    while not done and len(actions) < env.max_steps:
        legal = env.legal_actions()
        action = POLICIES[policy](obs, legal, env.expert_action(), rng)
        obs, reward, done = env.step(action)
        actions.append(action)
        structure.append((reward, done, len(legal), legal.index(action) if action in legal else -1))
        total += reward
        trace.append([action, obs, reward, done, env.instruction, env.legal_actions(), env.expert_action(), env.hint()])
        seen.append([obs, len(env.legal_actions())])
    return Episode(total, len(actions), done, _digest(view), _digest(trace),
                   fingerprint_entry(_digest(seen), structure), actions, texts)


# ----------------------------------------------------------------------------- the run
@dataclass
class _Run:
    source: str
    backend: str
    seeds: list[int]
    """The gate seeds: what the verdicts count."""
    fingerprint_seeds: list[int]
    limits: ModuleLimits
    difficulty: float
    lint: bool
    novelty: Callable[[str, dict], GateResult] | None
    env: SandboxedModuleEnv | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    played: dict[str, dict[int, Episode]] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    """Every seed a sweep plays: gate and fingerprint seeds, interleaved in an order keyed by the host's secret."""

    def __post_init__(self) -> None:
        self.order = list(dict.fromkeys(self.seeds + self.fingerprint_seeds))
        random.Random(measured_seed("gate-order", tuple(self.order))).shuffle(self.order)

    def play_all(self, policy: str, env: SandboxedModuleEnv | None = None) -> dict[int, Episode]:
        episodes = {seed: play_episode(env or self.env, policy, seed) for seed in self.order}
        if env is None:
            self.played[policy] = episodes
        return episodes

    def gated(self, policy: str) -> dict[int, Episode]:
        """``policy``'s episodes on the gate seeds (those the verdicts count)."""
        return {seed: self.played[policy][seed] for seed in self.seeds}

    def named(self, seeds: Sequence[int]) -> str:
        """Seeds as a detail names them: gate seeds by value, fingerprint seeds only counted (kept secret)."""
        shown = [s for s in dict.fromkeys(seeds) if s in self.seeds]
        hidden = len(set(seeds)) - len(shown)
        parts = ([f"seed{'s' if len(shown) > 1 else ''} {', '.join(map(str, shown))}"] if shown else []) + \
            ([f"{hidden} fingerprint seeds" if hidden > 1 else "a fingerprint seed"] if hidden else [])
        return " and ".join(parts)

    def wins(self, policy: str) -> int:
        return sum(contract.is_success(e.ret) for e in self.gated(policy).values())

    def share(self, policy: str) -> float:
        return self.wins(policy) / len(self.seeds)


def _gate_parse(run: _Run) -> str:
    problem = lint.parse_problem(run.source)
    if problem:
        raise GateFailed(problem)
    return "parses; defines class Env"


def _gate_size(run: _Run) -> str:
    problem = lint.size_problem(run.source)
    if problem:
        raise GateFailed(problem)
    return f"{len(run.source.encode('utf-8', 'surrogatepass'))} bytes"


def _gate_imports(run: _Run) -> str:
    if not run.lint:
        return "lint skipped (lint=False): the sandbox alone contains the module"
    problems = lint.import_problems(run.source)
    if problems:
        raise GateFailed("; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else ""))
    return "imports only allowed modules"


def _gate_instantiate(run: _Run) -> str:
    run.env = SandboxedModuleEnv(run.source, difficulty=run.difficulty, backend=run.backend, limits=run.limits)
    run.stats["max_steps"] = run.env.max_steps
    return f"Env({run.difficulty}) built; max_steps={run.env.max_steps}"


def _gate_api(run: _Run) -> str:
    episode = play_episode(run.env, "expert", run.seeds[0])
    return f"an expert episode of {episode.steps} steps answered in the contract's types"


def _gate_fuzz(run: _Run) -> str:
    actions = [a for a in hostile_actions() if isinstance(a, str)]
    run.env.reset(run.seeds[0])
    for action in actions:
        try:
            _, _, done = run.env.step(action)
        except GeneratedEnvFault as e:
            raise GeneratedEnvFault(e.gate, f"on the hostile action {action[:60]!r} ({len(action)} chars): {e.detail}",
                                    kind=e.kind) from e
        if done:
            run.env.reset(run.seeds[0])
    return f"{len(actions)} hostile actions answered"


def _gate_determinism(run: _Run) -> str:
    first = run.play_all("eps_expert")
    replay = play_episode(run.env, "eps_expert", run.seeds[0])
    if replay.trace != first[run.seeds[0]].trace:
        raise GateFailed(f"seed {run.seeds[0]} played twice in one process gave different trajectories; "
                         "derive every random choice from reset(seed), keep no state across episodes")
    left = max(0.1, run.env.deadline - time.monotonic())  # the second import counts against this gate's budget
    limits = replace(run.limits, import_timeout_s=min(run.limits.import_timeout_s, left))
    with run.env.fresh(limits=limits, gate="determinism") as other:
        other.deadline = run.env.deadline
        second = run.play_all("eps_expert", env=other)
    differ = [seed for seed in run.order if first[seed].trace != second[seed].trace]
    run.stats["p_expert_eps"] = run.share("eps_expert")
    if differ:
        raise GateFailed(f"{run.named(differ)} gave different trajectories in two fresh processes (each with its "
                         "own random PYTHONHASHSEED); expected identical ones: no clock, os.urandom, global random "
                         "or hash() of strings")
    return f"{len(run.seeds)} seeds identical across two processes and on replay"


def _gate_seed_sensitivity(run: _Run) -> str:
    starts = {seed: e.start for seed, e in run.gated("eps_expert").items()}
    run.stats["start_hashes"] = {str(seed): h for seed, h in starts.items()}
    distinct, needed = len(set(starts.values())), math.ceil(0.75 * len(run.seeds))
    if distinct < needed:
        raise GateFailed(f"expected at least {needed} of {len(run.seeds)} seeds to give distinct starts, got {distinct}")
    return f"{distinct} distinct starts of {len(run.seeds)}"


def _gate_expert(run: _Run) -> str:
    episodes = run.play_all("expert")
    run.stats["p_expert"] = run.share("expert")
    run.stats["expert_steps"] = {str(seed): e.steps for seed, e in run.gated("expert").items()}
    run.stats["fingerprint"] = {str(i): episodes[seed].fingerprint for i, seed in enumerate(run.fingerprint_seeds)}
    needed = math.ceil(7 / 8 * len(run.seeds))
    if run.wins("expert") < needed:
        raise GateFailed(f"expected the expert to win at least {needed} of {len(run.seeds)} seeds, "
                         f"got {run.wins('expert')}")
    return f"the expert won {run.wins('expert')} of {len(run.seeds)}"


def _gate_baselines(run: _Run) -> str:
    allowed, shares = math.floor(0.1 * len(run.seeds)), {}
    for policy in ("null", "constant", "random"):
        run.play_all(policy)
        run.stats[f"p_{policy}"] = shares[policy] = run.share(policy)
    beaten = [f"{p} won {run.wins(p)}" for p in shares if run.wins(p) > allowed]
    if beaten:
        raise GateFailed(f"expected the null, constant and random policies to win at most {allowed} of "
                         f"{len(run.seeds)} seeds each, got: {', '.join(beaten)}; success must need skill")
    return ", ".join(f"{p} won {run.wins(p)}" for p in shares)


WORD = re.compile(r"[a-z0-9]+")


def leaked_run(actions: Sequence[str], texts: Sequence[str]) -> str | None:
    """The first run of 3 consecutive words of the expert's actions (all of them if fewer) found in ``texts``."""
    words = WORD.findall(" ".join(actions).lower())
    n = min(3, len(words))
    if n == 0:
        return None
    haystack = [" " + " ".join(WORD.findall(text.lower())) + " " for text in texts]
    for i in range(len(words) - n + 1):
        needle = " " + " ".join(words[i:i + n]) + " "
        if any(needle in text for text in haystack):
            return needle.strip()
    return None


def _gate_leak(run: _Run) -> str:
    for seed, episode in run.played["expert"].items():
        found = leaked_run(episode.actions, episode.texts)
        if found:
            raise GateFailed(f"{run.named([seed])}: the expert's words {found!r} appear in the instruction, first "
                             "observation or hint; the answer must not be given away")
    return "no run of 3 expert words in the instruction, first observation or hint"


def _gate_speed(run: _Run) -> str:
    median_ms = 1000 * statistics.median(run.env.step_seconds) if run.env.step_seconds else 0.0
    run.stats["median_step_ms"] = round(median_ms, 3)
    run.stats["steps"] = len(run.env.step_seconds)
    unended = sorted({f"{policy} {run.named([seed])}" for policy, episodes in run.played.items()
                      for seed, e in episodes.items() if not e.ended})
    if median_ms > MAX_MEDIAN_STEP_MS:
        raise GateFailed(f"expected a median step of at most {MAX_MEDIAN_STEP_MS:g} ms, got {median_ms:.1f} ms")
    if unended:
        raise GateFailed(f"expected every episode to end (done=True) within max_steps={run.env.max_steps}, "
                         f"got {len(unended)} that did not: {', '.join(unended[:4])}")
    return f"median step within {MAX_MEDIAN_STEP_MS:g} ms; every episode ended within max_steps"


CHECKS: dict[str, Callable[[_Run], str]] = {
    "parse": _gate_parse, "size": _gate_size, "imports": _gate_imports, "instantiate": _gate_instantiate,
    "api": _gate_api, "fuzz": _gate_fuzz, "determinism": _gate_determinism,
    "seed_sensitivity": _gate_seed_sensitivity, "expert": _gate_expert, "baselines": _gate_baselines,
    "leak": _gate_leak, "speed": _gate_speed,
}


SWEEPS = ("determinism", "expert", "baselines")
"""Gates that play every seed, fingerprint seeds included: their budgets scale with the seeds played."""


def _run_gate(run: _Run, name: str) -> GateResult:
    start = time.perf_counter()
    if name == "novelty":
        if run.novelty is None:
            return GateResult("novelty", True, "no archive", time.perf_counter() - start)
        result = run.novelty(run.source, run.stats)
        return GateResult("novelty", bool(result.passed), str(result.detail), time.perf_counter() - start)
    if run.env is not None:
        scale = len(run.order) / len(set(run.seeds)) if name in SWEEPS else 1.0
        run.env.gate, run.env.deadline = name, time.monotonic() + run.limits.gate_budget_s * scale
    try:
        passed, detail = True, CHECKS[name](run)
    except GateFailed as e:
        passed, detail = False, str(e)
    except GeneratedEnvFault as e:
        passed, detail = False, f"{e.kind}: {e.detail}"
    return GateResult(name, passed, detail, time.perf_counter() - start)


def _sandbox_works(backend: str, limits: ModuleLimits) -> str | None:
    """After a module's sandbox died: does a fresh one start? If not, the failure is ours (infra)."""
    try:
        open_sandbox(backend, limits).close()
    except SandboxUnavailable as e:
        return str(e)
    return None


def validate_module(
    source: str, *, backend: str = "bwrap", seeds: Sequence[int] | None = None, limits: ModuleLimits | None = None,
    novelty: Callable[[str, dict], GateResult] | None = None, difficulty: float = 0.5, lint: bool = True,
    fingerprint_seeds: Sequence[int] | None = None,
) -> GateReport:
    """Run every gate on ``source`` in order, stopping at the first failure (see the module docstring).

    ``lint=False`` skips the import lint (the ``imports`` gate passes, saying so): the tests use it to show
    that the sandbox alone contains hostile modules. ``seeds`` default to :func:`gate_seeds`: fixed seeds
    (0..7, say) would tell a module it is being gated. ``fingerprint_seeds`` default to ``novelty``'s (a
    :class:`~meta_envs.design.novelty.NoveltyGate` carries its archive's), else to the host's
    (:func:`~meta_envs.design.novelty.fingerprint_seeds`). Never raises for anything the module does.
    """
    seeds = gate_seeds() if seeds is None else seeds
    if fingerprint_seeds is None:
        fingerprint_seeds = getattr(novelty, "fingerprint_seeds", None) or archive_fingerprint_seeds()
    if not seeds:
        raise ValueError("expected at least one seed, got none")
    run = _Run(source, backend, [int(s) for s in seeds], [int(s) for s in fingerprint_seeds], limits or ModuleLimits(),
               float(difficulty), lint, novelty)
    report = GateReport([], run.stats)
    try:
        for name in GATES:
            try:
                result = _run_gate(run, name)
            except SandboxUnavailable as e:
                report.infra_error = str(e)
                report.gates.append(GateResult(name, False, f"infra: {e}"))
                break
            report.gates.append(result)
            if not result.passed:
                if result.detail.startswith("sandbox:"):  # the module's or ours? a fresh sandbox tells
                    report.infra_error = _sandbox_works(backend, run.limits)
                break
    finally:
        if run.env is not None:
            run.env.close()
    return report
