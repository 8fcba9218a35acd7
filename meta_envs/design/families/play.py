"""Playing a built task: the solver (with and without a hint), the ε-expert and the random baseline.

A *solver* is what TaskDesign-v0's ``solver=`` takes, the same kinds as EnvDesign-v0's
(:func:`meta_envs.design.solving.as_solver`): a callable ``(observation, legal_actions) -> action``
(``legal_actions`` is ``info["valid_actions"]``, empty where the env cannot list them), an agentgym
``Policy``, or a named scripted solver; one with ``bind(env, seed)`` is bound before each play (the
built-in :class:`NoisyExpert` reads the env's expert that way). Every play gets its own reset seed and RNG from :func:`derive_seed`, so the same
base seed gives the same plays.

The hint (for the hint regret ``R_hint``): the family's expert's first action, appended to the first
observation as ``Hint: a good first action is: …``. A solver that can read gains from it; one that
cannot (the noisy expert) gains nothing, and ``R_hint`` is then 0.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from agentgym_envs.core import InfraError, TextEnv
from agentgym_envs.policies import random_action
from agentgym_envs.seeding import derive_seed

Policy = Callable[[str, list[str]], str]
#: ε of the ε-expert baseline in ``S`` (issue 19: the expert with ε = 0.25 random legal actions).
EXPERT_EPSILON = 0.25
_ROLES = {"solver": 1, "hint": 2, "expert_eps": 3, "random": 4, "expert": 5}


class NoisyExpert:
    """A stand-in solver that needs no model: the expert's action, or with probability ``epsilon`` a random
    legal one (:func:`~agentgym_envs.policies.random_action`, so free-text envs get a random well-formed
    move). Longer and more branching tasks make it fail more often, so its success moves with a config's
    difficulty (that is all it is for: tests and offline runs; pass a real ``solver=``)."""

    def __init__(self, epsilon: float = 0.7):
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon: expected a probability in [0, 1], got {epsilon!r}")
        self.epsilon = epsilon
        self._policy: Policy | None = None

    def bind(self, env: TextEnv, seed: int) -> None:
        """Called before each play (the solver protocol of :mod:`meta_envs.design.solving`)."""
        self._policy = _eps_expert(env, np.random.default_rng(seed), self.epsilon)

    def __call__(self, observation: str, legal: list[str]) -> str:
        if self._policy is None:
            raise RuntimeError("NoisyExpert plays an env: call bind(env, seed) before asking for an action")
        return self._policy(observation, legal)


def _eps_expert(env: TextEnv, rng: np.random.Generator, epsilon: float) -> Policy:
    base = env.unwrapped

    def act(observation: str, legal: list[str]) -> str:
        return random_action(base, rng) if rng.random() < epsilon else base.expert_action()

    return act


def _random(env: TextEnv, rng: np.random.Generator) -> Policy:
    return lambda observation, legal: random_action(env.unwrapped, rng)


def play(env: TextEnv, policy: Policy, seed: int, max_steps: int, note: str = "") -> tuple[bool, int]:
    """One episode of ``policy`` from ``reset(seed)``: (won, steps). ``note`` is appended to the first observation."""
    observation, info = env.reset(seed=seed)
    _raise_infra(info)
    if note:
        observation = f"{observation}\n{note}"
    steps = 0
    for steps in range(1, max_steps + 1):
        observation, _, terminated, truncated, info = env.step(policy(observation, list(info.get("valid_actions") or [])))
        if terminated or truncated:
            break
    _raise_infra(info)
    return bool(info.get("won", False)), steps


def _raise_infra(info: dict) -> None:
    """Our own machinery failed under the play (a sandbox died): not the designer's outcome."""
    if info.get("infra_error"):
        raise InfraError(str(info["infra_error"]))


def hint_of(env: TextEnv, seed: int) -> str:
    """The hint shown in the solver's hinted plays: the expert's first action on this instance."""
    env.reset(seed=seed)
    return f"Hint: a good first action is: {env.unwrapped.expert_action()}"


def bound(solver: Any, env: TextEnv, seed: int) -> Policy:
    """``solver`` ready for one play: its ``bind(env, seed)`` called when it has one (scripted solvers read
    the env's expert; learning ones reseed), then used as ``(observation, legal_actions) -> action``."""
    binder = getattr(solver, "bind", None)
    if callable(binder):
        binder(env, seed)
    return solver


def success(env: TextEnv, role: str, seed: int, k: int, max_steps: int, solver: Any = None) -> float:
    """Success share over ``k`` plays of ``role`` (``solver``, ``hint``, ``expert_eps``, ``random``); pass the
    same ``seed`` for ``solver`` and ``hint`` so the two differ only by the hint."""
    wins = 0
    note = hint_of(env, seed) if role == "hint" else ""
    for i in range(k):
        play_seed = derive_seed(seed, i)
        # The hinted plays reuse the solver's seeds and RNG streams (common random numbers): a solver that
        # ignores the hint plays exactly the same games, so its R_hint is exactly 0, not sampling noise.
        role_seed = derive_seed(seed, i, _ROLES["solver" if role == "hint" else role])
        rng = np.random.default_rng(role_seed)
        if role in ("solver", "hint"):
            policy = bound(solver, env, role_seed)
        elif role == "expert_eps":
            policy = _eps_expert(env, rng, EXPERT_EPSILON)
        else:
            policy = _random(env, rng)
        wins += play(env, policy, play_seed, max_steps, note)[0]
    return wins / k


def expert_solves(env: TextEnv, seed: int, max_steps: int) -> tuple[bool, int]:
    """Whether the family's expert wins the instance within ``max_steps`` (and in how many steps)."""
    return play(env, lambda observation, legal: env.unwrapped.expert_action(), seed, max_steps)
