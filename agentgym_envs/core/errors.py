"""The package's own exceptions. Messages say what was expected, what came, and what to do.

A model's bad action is *not* an exception at the API boundary: envs raise :class:`InvalidAction`
internally and the base class turns it into an observation with ``info["action_valid"] = False``.
"""

from __future__ import annotations


class AgentGymError(Exception):
    """Base class of every error this package raises on purpose."""


class InvalidAction(AgentGymError):
    """Raised inside an env's ``_step`` when the action cannot be carried out.

    The base class catches it: the agent sees ``reason`` as its observation and the episode goes on (ends where
    the env sets ``invalid_action_ends_episode``).
    """

    def __init__(self, reason: str, *, penalty: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.penalty = penalty


class ResetNeeded(AgentGymError):
    """``step`` was called before ``reset`` (a programming error, so it raises)."""


class SnapshotError(AgentGymError, ValueError):
    """A snapshot could not be taken or restored (wrong env class, corrupted, forged or foreign bytes)."""


class UnknownEnvError(AgentGymError):
    """An env id is not registered; the message suggests the closest registered ids."""


class InfraError(AgentGymError):
    """The environment's own infrastructure failed (a server, browser or sandbox). Never the agent's fault.

    Envs raise it from ``_step``/``_reset``; the base class reports it as ``info["infra_error"]`` and
    truncates the episode instead of crashing the caller.
    """


class MissingHook(AgentGymError, NotImplementedError):
    """An optional hook (``expert_action``, ``random_action``) was called on an env that does not implement it.

    Ask first with :func:`agentgym_envs.core.hooks.has_expert` / :func:`~agentgym_envs.core.hooks.has_random_action`.
    """


class NoExpert(MissingHook):
    """The env has no scripted expert (``expert_action``)."""


class NoRandomAction(MissingHook):
    """The env has no ``random_action(rng)`` of its own (its valid actions, if listed, are the random baseline)."""
