"""Asking an env which optional hooks it implements, instead of probing with ``hasattr``.

:class:`~agentgym_envs.core.text_env.TextEnv` declares every optional hook: ``expert_action()`` and
``random_action(rng)`` raise :class:`~agentgym_envs.core.errors.NoExpert` /
:class:`~agentgym_envs.core.errors.NoRandomAction` unless a subclass overrides them, and
``valid_actions()`` returns ``None`` when the env cannot list its moves. So ``hasattr`` is True for every
text env and says nothing; these functions say whether the env really has the hook. They look through
gymnasium wrappers (``env.unwrapped``) and also accept objects that are not :class:`TextEnv` (a game
seat, a foreign env): there, a method of that name counts.

>>> import agentgym_envs
>>> env = agentgym_envs.make("agentgym/Maze-Easy-v0")
>>> has_expert(env), has_random_action(env)
(True, False)
"""

from __future__ import annotations

from typing import Any

from .text_env import TextEnv


def _implements(env: Any, name: str) -> bool:
    base = getattr(env, "unwrapped", env)
    method = getattr(type(base), name, None)
    return callable(method) and method is not getattr(TextEnv, name)


def has_expert(env: Any) -> bool:
    """Whether ``env`` (or the env it wraps) has a scripted expert: ``expert_action()`` may be called."""
    return _implements(env, "expert_action")


def has_random_action(env: Any) -> bool:
    """Whether ``env`` (or the env it wraps) draws random well-formed moves itself: ``random_action(rng)``."""
    return _implements(env, "random_action")


def valid_actions(env: Any) -> list[str] | None:
    """The admissible actions of ``env`` (or the env it wraps) now, or ``None`` when it cannot list them."""
    base = getattr(env, "unwrapped", env)
    method = getattr(base, "valid_actions", None)
    return method() if callable(method) else None
