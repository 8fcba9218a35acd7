"""Policies: the one contract for everything that plays an env, and the policies that need no model.

Layout:

* ``base.py``: the contract. :class:`Policy` (chats in, :class:`Completion` out), :class:`TokenPolicy`
  (the token-exact form rollouts use), :class:`SamplingConfig`, :class:`EnvBoundPolicy` (policies that read
  the env behind each chat); ``Message`` is the chat message of :mod:`agentgym_envs.chat`.
* ``env_side.py``: :class:`RandomPolicy` and :class:`ExpertPolicy`, which act from env state and render
  through the env's action protocol, and :func:`random_action`, the one random rule.
* ``opponents.py``: policies in a game seat. :class:`Opponent` is the callable form games call;
  :class:`PolicyOpponent` puts any :class:`Policy` in a seat; :class:`RandomOpponent` and
  :class:`ScriptedOpponent` are the built-in seats.

Model backends (Hugging Face, vLLM, OpenAI-compatible HTTP) live in ``trainer/models/backends/``: they need torch,
and they are what the trainer syncs its weights into. They implement the contract defined here. This package
is the lowest layer of the tree, so envs, games, the trainer and the leaderboards can all import it and it
imports none of them (``docs/architecture.md``).

>>> import agentgym_envs.policies as policies
>>> isinstance(policies.RandomPolicy(), policies.Policy) and isinstance(policies.ExpertPolicy(), policies.EnvBoundPolicy)
True
"""

from .base import (Completion, EnvBoundPolicy, FinishReason, Message, NoExpert, Policy, SamplingConfig,
                   TokenPolicy)
from .env_side import EnvSidePolicy, ExpertPolicy, RandomPolicy, expert_action, random_action
from .opponents import (Opponent, PolicyOpponent, RandomOpponent, ScriptedOpponent, ScriptedPolicy, SeatView,
                        policy_rng, resolve_opponent)

__all__ = [
    "Completion", "EnvBoundPolicy", "FinishReason", "Message", "NoExpert", "Policy", "SamplingConfig", "TokenPolicy",
    "EnvSidePolicy", "ExpertPolicy", "RandomPolicy", "expert_action", "random_action",
    "Opponent", "PolicyOpponent", "RandomOpponent", "ScriptedOpponent", "ScriptedPolicy", "SeatView", "policy_rng",
    "resolve_opponent",
]
