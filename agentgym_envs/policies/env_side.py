"""Env-side policies: they read the env instead of the chat. :class:`RandomPolicy` is every env's floor,
:class:`ExpertPolicy` (the env's scripted ``expert_action()``) its ceiling and the behaviour-cloning teacher.

They speak the same :class:`~agentgym_envs.policies.base.Policy` contract as model backends, so the
trainer's text episodes, the leaderboards' runner and ``agentgym baselines`` treat them like any model.
Because they act from env state, the driver binds them to the env of each chat before every ``act``
(:class:`~agentgym_envs.policies.base.EnvBoundPolicy`).

* **Rendering.** With ``protocol=None`` (the default) a reply is rendered in the protocol of the bound env's
  :class:`~agentgym_envs.protocols.ActionProtocolWrapper`, which parses it back: baselines travel the same
  path as model replies. A bound env without a wrapper gets the native action verbatim. A ``protocol``
  given to the constructor renders every reply in that protocol instead.
* **The random rule** (:func:`random_action`, also what game seats use): uniform over the env's
  ``valid_actions()``; else the env's own ``random_action(rng)``; else a short random string.
* **Seeding.** :class:`RandomPolicy` draws from the generator it was given (one stream across calls, owned
  by the caller), or else from a generator derived from ``sampling.seed`` on every call, so an episode's
  moves depend only on its own seeds, never on which worker played it or in which order. That generator
  is a separate stream from the integer itself: an env seeded with the same integer would otherwise
  see the agent's first draw mirror its own (e.g. guess the very word a puzzle drew).

>>> import gymnasium, agentgym_envs
>>> from agentgym_envs.protocols import ActionProtocolWrapper
>>> env = ActionProtocolWrapper(gymnasium.make("agentgym/Maze-Easy-v0"), "tags"); _ = env.reset(seed=0)
>>> expert = ExpertPolicy(); expert.bind([env])
>>> expert.act([[]], sampling=SamplingConfig())[0].text.startswith("<action>")
True
>>> policy = RandomPolicy(); policy.bind([env])
>>> reply = policy.act([[]], sampling=SamplingConfig(seed=7))[0].text
>>> reply == policy.act([[]], sampling=SamplingConfig(seed=7))[0].text  # a function of the seed
True
>>> env.unwrapped.valid_actions().count(reply.removeprefix("<action>").removesuffix("</action>"))
1
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np

from ..core.hooks import has_expert, has_random_action, valid_actions
from ..protocols import ActionProtocol, get_protocol
from ..seeding import derive_rng
from .base import Completion, Message, NoExpert, SamplingConfig

__all__ = ["EnvSidePolicy", "RandomPolicy", "ExpertPolicy", "random_action", "expert_action", "AGENT_STREAM"]

#: Second key of the per-call generator (:func:`~agentgym_envs.seeding.derive_rng`): apart from the env's stream.
AGENT_STREAM = 0xA6E7
#: What the random rule types where an env can neither list its actions nor draw a random one.
_FALLBACK_ALPHABET = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789 "))
_FALLBACK_CHARS = 12


def random_action(env: Any, rng: np.random.Generator) -> str:
    """The one random rule: uniform over ``valid_actions()``; else ``random_action(rng)``; else 12 random characters.

    Not ``action_space.sample()``: that draws strings up to the space's bound (a million characters behind a
    protocol wrapper), which measures nothing and bloats results. A short random string is rejected like
    any unparseable reply, which is what a random policy earns on such envs.

    >>> class Seat:  # anything with valid_actions() works, not only envs
    ...     def valid_actions(self): return ["fold", "call"]
    >>> random_action(Seat(), np.random.default_rng(0)) in ("fold", "call")
    True
    >>> len(random_action(object(), np.random.default_rng(0))) <= 12
    True
    """
    base = getattr(env, "unwrapped", env)
    actions = valid_actions(base)
    if actions:
        return actions[int(rng.integers(len(actions)))]
    if has_random_action(base):
        return base.random_action(rng)
    return "".join(rng.choice(_FALLBACK_ALPHABET, size=_FALLBACK_CHARS)).strip() or "a"


def expert_action(env: Any) -> str:
    """The env's scripted expert move; :class:`NoExpert` (saying what to do) when it has none."""
    base = getattr(env, "unwrapped", env)
    if not has_expert(base):
        spec = getattr(base, "spec", None)
        name = spec.id if spec is not None else type(base).__name__
        raise NoExpert(f"the expert policy needs a scripted expert, and {name} has no expert_action(); "
                            "leave that env out or use another policy")
    return base.expert_action()


def bound_protocol(env: Any) -> ActionProtocol | None:
    """The protocol of the :class:`~agentgym_envs.protocols.ActionProtocolWrapper` around ``env``, if any."""
    while env is not None:
        protocol = getattr(env, "protocol", None) if isinstance(env, gymnasium.Wrapper) else None
        if isinstance(protocol, ActionProtocol):
            return protocol
        env = env.env if isinstance(env, gymnasium.Wrapper) else None
    return None


class EnvSidePolicy:
    """The plumbing of env-side policies: the bound envs, the protocol each reply is rendered in, and a
    batch-size check. Subclasses implement :meth:`actions` (one native action per bound env)."""

    def __init__(self, protocol: str | ActionProtocol | None = None):
        self.protocol = None if protocol is None else get_protocol(protocol)
        self._envs: list[Any] = []  # unwrapped: what the policy reads
        self._renderers: dict[int, ActionProtocol | None] = {}  # id(unwrapped env) -> its reply protocol

    def bind(self, envs: Sequence[Any]) -> None:
        """The env behind each chat of the next ``act`` (wrapped or not; see the module docstring)."""
        self._envs = [getattr(env, "unwrapped", env) for env in envs]
        self._renderers = {id(base): self.protocol or bound_protocol(env) for base, env in zip(self._envs, envs)}

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        self._check(batch)
        return [self._completion(action, env) for action, env in zip(self.actions(sampling), self._envs)]

    def actions(self, sampling: SamplingConfig) -> list[str]:
        """The native action for each bound env, in order."""
        raise NotImplementedError(f"{type(self).__name__} must implement actions(sampling)")

    def _check(self, batch: list[list[Message]]) -> None:
        if len(batch) != len(self._envs):
            raise ValueError(f"expected one chat per bound env ({len(self._envs)}), got {len(batch)}; "
                             "call bind(envs) with the env of every chat before act()")

    def _completion(self, action: str, env: Any) -> Completion:
        """``action`` rendered for ``env`` (an unwrapped env of the last :meth:`bind`)."""
        protocol = self._renderers.get(id(env), self.protocol)
        return Completion(protocol.render(action, env) if protocol is not None else action, finish_reason="stop")


class ExpertPolicy(EnvSidePolicy):
    """Each bound env's ``expert_action()``: the ceiling, and the teacher of behaviour cloning."""

    def actions(self, sampling: SamplingConfig) -> list[str]:
        return [expert_action(env) for env in self._envs]


class RandomPolicy(EnvSidePolicy):
    """The random rule (:func:`random_action`) on each bound env: the floor every policy should clear.

    ``rng``: one generator for every call (the caller owns the stream and its seed); without one, each call
    draws from a fresh generator derived from ``sampling.seed`` (module docstring), so runs repeat exactly
    without touching global RNG state.
    """

    def __init__(self, protocol: str | ActionProtocol | None = None, *, rng: np.random.Generator | None = None):
        super().__init__(protocol)
        self.rng = rng

    def actions(self, sampling: SamplingConfig) -> list[str]:
        rng = self.rng if self.rng is not None else derive_rng(0 if sampling.seed is None else sampling.seed, AGENT_STREAM)
        return [random_action(env, rng) for env in self._envs]

    def _completion(self, action: str, env: Any) -> Completion:
        """Random characters (an env without valid actions) that a protocol cannot render, such as a tool call
        naming no tool, are still a reply: sent as they are, an invalid action (the agent's outcome), not a
        crash of the run."""
        try:
            return super()._completion(action, env)
        except ValueError:
            return Completion(action, finish_reason="stop")
