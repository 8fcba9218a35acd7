"""The solver side of a design episode: any policy plays a generated env, with and without its hint.

A *solver* is whatever plays the designed env; EnvDesign-v0 takes any of these (:func:`as_solver`):

* a callable ``(observation, legal_actions) -> action``;
* an agentgym :class:`~agentgym_envs.policies.base.Policy` (the tiny model, ``hf:``, ``vllm:``,
  ``openai:``): the observation and the legal actions become one chat, its completion the action;
* ``"clue"`` (the default, :class:`ClueSolver`), ``"noisy-expert"``, ``"random"`` or ``"expert"``.

A solver object may also have ``bind(env, seed)``: it is called before each episode with the sandboxed
env (:class:`~meta_envs.design.sandboxed.SandboxedModuleEnv`) so scripted solvers can read the module's
own expert. The two offline stand-ins for a learning model:

* :class:`ClueSolver` reads the text literally: it plays the legal action whose own words (those not
  shared by every legal action) were mentioned last in what it was shown, else a random legal action.
  It never reasons about a hint, so misleading clues (a designer's difficulty knob) beat it smoothly;
* :class:`NoisyExpertSolver` plays the module's expert but a uniformly random legal action with
  probability ``epsilon`` (its own RNG, seeded per episode): its success falls as an env asks for
  longer or less forgiving play.

"With hint" means the same seeds with the module's ``hint()`` shown above every observation.

The solvers' random choices are keyed by the host's secret (:func:`~meta_envs.design.sandboxed.measured_seed`),
like the baselines', so a module cannot replay a player's RNG from the seed to recognise it.
:func:`measure_solver` plays every episode in a fresh sandboxed process (nothing carries over between
plays, so a module cannot count who played before) in an order drawn from the OS.
"""

from __future__ import annotations

import math
import random
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable

from .contract import is_success
from .sandboxed import GeneratedEnvFault, measured_seed

SolverFn = Callable[[str, list[str]], str]
SOLVER_SPECS = ("clue", "noisy-expert", "random", "expert")
_WORD = re.compile(r"[a-z0-9]+")
SOLVER_SYSTEM_PROMPT = ("You play a small text game. Reply with exactly one of the legal actions listed, "
                        "nothing else.")


class SolverSpecError(ValueError):
    """The ``solver`` kwarg is none of the accepted kinds; the message lists them."""


class NoisyExpertSolver:
    """The module's expert, except a random legal action with probability ``epsilon`` (seeded per episode)."""

    def __init__(self, epsilon: float = 0.3, salt: int = 7919):
        if not 0.0 <= epsilon <= 1.0:
            raise SolverSpecError(f"epsilon: expected a probability in [0, 1], got {epsilon!r}")
        self.epsilon, self.salt = epsilon, salt
        self._env: Any = None
        self._rng = random.Random(0)

    def bind(self, env: Any, seed: int) -> None:
        self._env, self._rng = env, random.Random(measured_seed("solver", "noisy-expert", self.salt, seed))

    def __call__(self, observation: str, legal: list[str]) -> str:
        if legal and self._rng.random() < self.epsilon:
            return self._rng.choice(legal)
        return self._env.expert_action() if self._env is not None else (legal[0] if legal else "")


class ClueSolver:
    """The legal action whose distinctive words occur last in the text shown; random (seeded) otherwise.

    >>> solver = ClueSolver()
    >>> solver("The red lamp is off. The lamp shows blue.", ["press red", "press blue", "press green"])
    'press blue'
    """

    def __init__(self) -> None:
        self._rng = random.Random(0)

    def bind(self, env: Any, seed: int) -> None:
        self._rng = random.Random(measured_seed("solver", "clue", seed))

    def __call__(self, observation: str, legal: list[str]) -> str:
        if not legal:
            return ""
        words = [set(_WORD.findall(action.lower())) for action in legal]
        common = set.intersection(*words) if words else set()
        positions = {w: i for i, w in enumerate(_WORD.findall(observation.lower()))}  # last occurrence
        scores = [max((positions.get(w, -1) for w in ws - common), default=-1) for ws in words]
        best = max(scores)
        if best < 0:
            return self._rng.choice(legal)
        return self._rng.choice([a for a, s in zip(legal, scores) if s == best])


class RandomSolver:
    """A uniformly random legal action (seeded per episode): the floor any solver should beat."""

    def __init__(self) -> None:
        self._rng = random.Random(0)

    def bind(self, env: Any, seed: int) -> None:
        self._rng = random.Random(measured_seed("solver", "random", seed))

    def __call__(self, observation: str, legal: list[str]) -> str:
        return self._rng.choice(legal) if legal else ""


class PolicySolver:
    """An agentgym chat policy as a solver: one chat per step (no memory across steps, greedy)."""

    def __init__(self, policy: Any, max_new_tokens: int = 32):
        from agentgym_envs.policies.base import SamplingConfig

        self.policy, self.sampling = policy, SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens)

    def __call__(self, observation: str, legal: list[str]) -> str:
        prompt = observation + "\n\nLegal actions: " + ", ".join(legal[:64])
        messages = [{"role": "system", "content": SOLVER_SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
        completion = self.policy.act([messages], sampling=self.sampling)[0]
        return completion.text.strip()


def as_solver(solver: Any) -> Any:
    """Any accepted ``solver`` kwarg as a callable ``(observation, legal_actions) -> action``."""
    if solver is None or solver == "clue":
        return ClueSolver()
    if solver == "noisy-expert":
        return NoisyExpertSolver()
    if solver == "random":
        return RandomSolver()
    if solver == "expert":
        return NoisyExpertSolver(epsilon=0.0)
    if hasattr(solver, "act") and not callable(solver):
        return PolicySolver(solver)
    if hasattr(solver, "act") and hasattr(solver, "render_chat"):
        return PolicySolver(solver)
    if callable(solver):
        return solver
    raise SolverSpecError(f"solver: expected a callable (observation, legal_actions) -> action, an agentgym "
                          f"Policy, or one of {', '.join(SOLVER_SPECS)}; got {solver!r:.80}")


@dataclass(frozen=True)
class SolverRecord:
    """Per seed: the solver's wins without and with the hint (None: no hint), and the baselines' wins.

    The baselines (the expert with epsilon-random actions and the uniformly random policy, exactly the
    gates' policies) are played on the solver's own seeds, each play in its own fresh process started
    exactly like the solver's, so skill-dependence is measured where p_hat is and a module cannot tell
    the players apart but by how they play.
    """

    seeds: tuple[int, ...]
    wins: tuple[bool, ...]
    hint_wins: tuple[bool, ...] | None
    eps_expert_wins: tuple[bool, ...] = ()
    random_wins: tuple[bool, ...] = ()

    @property
    def p_solver(self) -> float:
        return sum(self.wins) / len(self.wins)

    @property
    def p_hint(self) -> float | None:
        return None if self.hint_wins is None else sum(self.hint_wins) / len(self.hint_wins)

    @property
    def p_expert_eps(self) -> float:
        return sum(self.eps_expert_wins) / len(self.eps_expert_wins)

    @property
    def p_random(self) -> float:
        return sum(self.random_wins) / len(self.random_wins)


def play_episode(env: Any, solver: Any, seed: int, show_hint: bool = False) -> tuple[float, int, bool]:
    """One episode of ``solver`` on a sandboxed module env; ``(return, steps, had_hint)``.

    Module faults propagate (``GeneratedEnvFault``: the designer's outcome; ``SandboxUnavailable``: ours).
    """
    observation = env.reset(seed)
    if hasattr(solver, "bind"):
        solver.bind(env, seed)
    hint = env.hint() if show_hint else None
    total, steps = 0.0, 0
    for steps in range(1, int(env.max_steps) + 1):
        shown = f"Hint: {hint}\n\n{observation}" if hint else observation
        if steps == 1 and getattr(env, "instruction", ""):
            shown = f"{env.instruction}\n\n{shown}"
        action = solver(shown, list(env.legal_actions()))
        observation, reward, done = env.step(action if isinstance(action, str) else str(action))
        total += reward
        if done:
            break
    return total, steps, bool(hint)


RECHECK_SEEDS = 2
"""Play seeds on which the null and constant policies and a second ε-expert process re-check the gates."""
RANDOM_WIN_SHARE = 0.25
"""The random policy winning more than this share of the play seeds fails the play (the gates allow 10%;
the slack keeps an honest module's rare random wins on new seeds from failing it)."""


def measure_solver(env: Any, solver: Any, seeds: Sequence[int]) -> SolverRecord:
    """Every seed: the solver, the solver with the hint (when the module gives one on the first seed),
    the epsilon-expert and the random policy; then the gates' re-check on :data:`RECHECK_SEEDS` of them.

    ``env`` is a :class:`~meta_envs.design.sandboxed.SandboxedModuleEnv`: it only says whether there is
    a hint; each play runs in a fresh copy (``env.fresh()``), in an order shuffled with the OS's
    randomness. A module that plays differently here than in the gates (a baseline wins, or its
    trajectories are not reproducible) raises :class:`GeneratedEnvFault` (gate ``play``, kind ``recheck``).
    """
    env.reset(seeds[0])
    runs = ["solver", "hint", "eps_expert", "random"] if env.hint() else ["solver", "eps_expert", "random"]
    rechecked = sorted(seeds, key=lambda seed: measured_seed("recheck", seed))[:RECHECK_SEEDS]
    plays = [(run, seed) for seed in seeds for run in runs]
    plays += [(run, seed) for seed in rechecked for run in ("null", "constant", "eps_replay")]
    secrets.SystemRandom().shuffle(plays)
    results = {play: _play_fresh(env, solver, *play) for play in plays}
    _recheck(results, seeds, rechecked)
    wins = {run: tuple(is_success(results[run, seed][0]) for seed in seeds) for run in runs}
    return SolverRecord(tuple(seeds), wins["solver"], wins.get("hint"), wins["eps_expert"], wins["random"])


def _play_fresh(env: Any, solver: Any, run: str, seed: int) -> tuple[float, str | None]:
    """One play in a new sandboxed process: (return, the baseline's trace digest or None for the solver)."""
    from .gates import play_episode as play_baseline

    with env.fresh(gate="play") as fresh:
        if run in ("solver", "hint"):
            return play_episode(fresh, solver, seed, show_hint=run == "hint")[0], None
        episode = play_baseline(fresh, "eps_expert" if run == "eps_replay" else run, seed)
        return episode.ret, episode.trace


def _recheck(results: dict, seeds: Sequence[int], rechecked: Sequence[int]) -> None:
    """The gates' determinism and baselines, again on play seeds: the module cannot tell these from gates."""
    problems = [f"seed {seed}: the ε-expert played it differently in two fresh processes" for seed in rechecked
                if results["eps_replay", seed][1] != results["eps_expert", seed][1]]
    problems += [f"seed {seed}: the {policy} policy won" for seed in rechecked for policy in ("null", "constant")
                 if is_success(results[policy, seed][0])]
    random_wins = sum(is_success(results["random", seed][0]) for seed in seeds)
    if random_wins > math.floor(RANDOM_WIN_SHARE * len(seeds)):
        problems.append(f"the random policy won {random_wins} of {len(seeds)} play seeds")
    if problems:
        raise GeneratedEnvFault("play", "the re-check of the gates on play seeds failed: " + "; ".join(problems)
                                + "; a module must play the same game whoever plays and whatever the seed",
                                kind="recheck")
