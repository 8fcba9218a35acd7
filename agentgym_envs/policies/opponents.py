"""Policies in the seat of a multi-agent game: the :class:`Opponent` form games call, and its adapters.

An opponent is any callable ``(observation: str, info: dict) -> str``: the same text an agent sees and the
seat's info from the game (``valid_actions``, ``view``, ``instruction``, ...). Whoever drives the game (the
self-play wrapper, the league, :func:`~agentgym_envs.games.multiagent.arena.play_game`) adds
``info["rng"]``, a ``numpy.random.Generator`` owned by the driver: policies that need randomness draw from
it, so games are reproducible from their seed and env snapshots capture the stream.

* :class:`RandomOpponent`: the random rule of :func:`~agentgym_envs.policies.env_side.random_action`
  (uniform over the seat's ``valid_actions``), drawn from ``info["rng"]``.
* :class:`ScriptedOpponent`: a game's heuristic (a :data:`ScriptedPolicy` of the seat's ``view``, its legal
  moves and ``info["rng"]``).
* :class:`PolicyOpponent`: any :class:`~agentgym_envs.policies.base.Policy` (a model backend, a frozen copy
  of the learner, an env-side baseline) in a seat: the observation becomes a one-message chat and the
  reply is the move; its sampling seed is drawn from ``info["rng"]``.

Opponents should be stateless, i.e. functions of ``(observation, info, info["rng"])``: the self-play
wrapper's snapshots leave the opponent out, and the observation and ``view`` already hold the history.

>>> rng = np.random.default_rng(0)
>>> RandomOpponent()("Your move.", {"valid_actions": ["a1", "b2"], "rng": rng}) in ("a1", "b2")
True
>>> from agentgym_envs.policies.env_side import RandomPolicy
>>> PolicyOpponent(RandomPolicy())("Your move.", {"valid_actions": ["a1", "b2"], "rng": rng}) in ("a1", "b2")
True
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Protocol

import numpy as np

from ..seeding import text_seed
from .base import EnvBoundPolicy, Message, Policy, SamplingConfig
from .env_side import random_action

__all__ = ["Opponent", "ScriptedPolicy", "SeatView", "RandomOpponent", "ScriptedOpponent", "PolicyOpponent",
           "policy_rng", "resolve_opponent"]

#: A game's scripted policy: (the seat's view, its legal moves, a generator) -> a legal move.
ScriptedPolicy = Callable[[dict[str, Any], list[str], np.random.Generator], str]


class Opponent(Protocol):
    def __call__(self, observation: str, info: dict[str, Any]) -> str: ...


def policy_rng(info: dict[str, Any]) -> np.random.Generator:
    """``info["rng"]``, or (when a caller gave none) a generator seeded by the state key, so still deterministic."""
    rng = info.get("rng")
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(text_seed(str(info.get("state_key", ""))))


class SeatView:
    """A seat's info seen as an env by env-side policies: ``valid_actions()`` are the seat's legal moves."""

    def __init__(self, info: dict[str, Any]):
        self.info = info

    @property
    def unwrapped(self) -> "SeatView":
        return self

    def valid_actions(self) -> list[str]:
        return list(self.info.get("valid_actions") or [])


class RandomOpponent:
    """The random rule on the seat's legal moves, drawn from ``info["rng"]``: the floor of every league."""

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        return random_action(SeatView(info), policy_rng(info))

    def __repr__(self) -> str:
        return "RandomOpponent()"


class ScriptedOpponent:
    """A game's heuristic policy (a function of the seat's ``view``, its legal moves and the generator)."""

    def __init__(self, policy: ScriptedPolicy):
        self.policy = policy

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        legal = info.get("valid_actions") or []
        return self.policy(info["view"], legal, policy_rng(info)) if legal else ""

    def __repr__(self) -> str:
        return f"ScriptedOpponent({getattr(self.policy, '__module__', '')}.{getattr(self.policy, '__qualname__', self.policy)})"


class PolicyOpponent:
    """Any :class:`Policy` in a game seat: a chat of the seat's observation in, the reply's text as the move.

    ``sampling``'s seed is replaced by one drawn from ``info["rng"]`` on every move, so games stay a function
    of their seed. An env-side policy is bound to the seat (:class:`SeatView`) before it acts. The reply goes
    to the game as it is: games parse only their own move grammar, and an illegal reply forfeits.
    """

    def __init__(self, policy: Policy, *, sampling: SamplingConfig | None = None, system_prompt: str | None = None):
        self.policy = policy
        self.sampling = sampling or SamplingConfig()
        self.system_prompt = system_prompt

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        seed = int(policy_rng(info).integers(2**32))
        chat: list[Message] = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        chat.append({"role": "user", "content": observation})
        if isinstance(self.policy, EnvBoundPolicy):
            self.policy.bind([SeatView(info)])
        return self.policy.act([chat], sampling=replace(self.sampling, seed=seed))[0].text

    def __repr__(self) -> str:
        return f"PolicyOpponent({self.policy!r})"


def resolve_opponent(spec: str | Opponent | Policy, game: Any) -> Opponent:
    """``"random"``, ``"scripted"`` (the game's own ``scripted_policy``), a :class:`Policy` (through
    :class:`PolicyOpponent`) or any :class:`Opponent` callable, as an :class:`Opponent`."""
    if isinstance(spec, str):
        if spec == "random":
            return RandomOpponent()
        if spec == "scripted":
            policy = getattr(type(game.unwrapped), "scripted_policy", None)
            if policy is None:
                raise ValueError(f"{type(game.unwrapped).__name__} has no scripted_policy; use opponent='random' or a callable")
            return ScriptedOpponent(policy)
    if isinstance(spec, Policy) and not callable(spec):
        return PolicyOpponent(spec)
    if callable(spec):
        return spec
    raise ValueError(f"opponent must be 'random', 'scripted' or a callable (observation, info) -> str, or a Policy "
                     f"with act(batch, sampling=...), got {spec!r}")
