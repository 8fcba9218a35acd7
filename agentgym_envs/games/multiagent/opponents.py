"""Policies that play a seat of a multi-agent game: the :class:`Opponent` protocol and the built-ins.

An opponent is any callable ``(observation: str, info: dict) -> str``: the same text an agent sees and the
seat's info from the game (``valid_actions``, ``view``, ``instruction``, ...). Whoever drives the game (the
self-play wrapper, the league, :func:`~agentgym_envs.games.multiagent.arena.play_game`) adds
``info["rng"]``, a ``numpy.random.Generator`` owned by the driver: policies that need randomness draw from
it, so games are reproducible from their seed and env snapshots capture the stream. A trainer plugs a
frozen copy of the learner in through the same callable (and may use ``info["rng"]`` to seed sampling).

Opponents should be stateless, i.e. functions of ``(observation, info, info["rng"])``: the self-play
wrapper's snapshots leave the opponent out, and the observation and ``view`` already hold the history.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ...seeding import text_seed
from .aec import ScriptedPolicy


class Opponent(Protocol):
    def __call__(self, observation: str, info: dict[str, Any]) -> str: ...


def policy_rng(info: dict[str, Any]) -> np.random.Generator:
    """``info["rng"]``, or (when a caller gave none) a generator seeded by the state key, so still deterministic."""
    rng = info.get("rng")
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(text_seed(str(info.get("state_key", ""))))


class RandomOpponent:
    """Uniformly random among ``info["valid_actions"]``: the floor every learned policy should clear."""

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        legal = info.get("valid_actions") or []
        return legal[int(policy_rng(info).integers(len(legal)))] if legal else ""

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


def resolve_opponent(spec: str | Opponent, game: Any) -> Opponent:
    """``"random"``, ``"scripted"`` (the game's own ``scripted_policy``) or any callable, as an :class:`Opponent`."""
    if isinstance(spec, str):
        if spec == "random":
            return RandomOpponent()
        if spec == "scripted":
            policy = getattr(type(game.unwrapped), "scripted_policy", None)
            if policy is None:
                raise ValueError(f"{type(game.unwrapped).__name__} has no scripted_policy; use opponent='random' or a callable")
            return ScriptedOpponent(policy)
    if callable(spec):
        return spec
    raise ValueError(f"opponent must be 'random', 'scripted' or a callable (observation, info) -> str, got {spec!r}")
