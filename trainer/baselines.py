"""Baseline policies that read the env instead of the chat: the scripted expert and uniform random.

They speak the same :class:`~trainer.policy.Policy` contract as model backends, so every evaluation and
behaviour-cloning path treats them alike. Because they act from env state, the rollout driver tells them
which env each chat belongs to through :meth:`EnvBoundPolicy.bind` before every ``act``.

>>> import gymnasium, agentgym_envs
>>> env = gymnasium.make("agentgym/Maze-Easy-v0"); _ = env.reset(seed=0)
>>> expert = ScriptedExpertPolicy(protocol="tags"); expert.bind([env.unwrapped])
>>> expert.act([[]], sampling=SamplingConfig())[0].text.startswith("<action>")
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentgym_envs.protocols import ActionProtocol, get_protocol

from .policy import Completion, Message, SamplingConfig


@runtime_checkable
class EnvBoundPolicy(Protocol):
    """A policy that needs the (unwrapped) env behind each chat of the next batch."""

    def bind(self, envs: Sequence[Any]) -> None: ...


class _EnvPolicy:
    """Shared plumbing: the bound envs, the protocol that renders native actions, and a batch-size check."""

    def __init__(self, protocol: str | ActionProtocol = "plain"):
        self.protocol = get_protocol(protocol)
        self._envs: list[Any] = []

    def bind(self, envs: Sequence[Any]) -> None:
        self._envs = [getattr(env, "unwrapped", env) for env in envs]

    def _check(self, batch: list[list[Message]]) -> None:
        if len(batch) != len(self._envs):
            raise ValueError(f"expected one chat per bound env ({len(self._envs)}), got {len(batch)}; "
                             "call bind(envs) with the env of every chat before act()")

    def _completion(self, action: str, env: Any) -> Completion:
        return Completion(self.protocol.render(action, env), finish_reason="stop")


class ScriptedExpertPolicy(_EnvPolicy):
    """The env's own ``expert_action()``, rendered in ``protocol``: the ceiling and the BC teacher."""

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        self._check(batch)
        return [self._completion(env.expert_action(), env) for env in self._envs]


class RandomPolicy(_EnvPolicy):
    """Uniform over the env's ``valid_actions()`` (the floor); ``fallback`` when an env lists none.

    Draws come from its own generator, re-seeded from ``sampling.seed`` on each call when given, so runs
    repeat exactly without touching global RNG state.
    """

    def __init__(self, protocol: str | ActionProtocol = "plain", *, seed: int = 0, fallback: str = "look"):
        super().__init__(protocol)
        self.rng = np.random.default_rng(seed)
        self.fallback = fallback

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        self._check(batch)
        out = []
        for env in self._envs:
            actions = env.valid_actions() if hasattr(env, "valid_actions") else None
            action = actions[int(self.rng.integers(len(actions)))] if actions else self.fallback
            out.append(self._completion(action, env))
        return out
