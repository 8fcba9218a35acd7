"""Env-side baseline policies: uniform random and the scripted expert, spoken through the entry's protocol.

They read the env rather than the chat, so the runner binds them to the (protocol-wrapped) env of each chat
before every ``act``. Their replies are rendered in the wrapper's protocol and parsed back by it, so the
baselines travel the same path as model replies: protocol, chat history, store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agentgym_envs.seeding import derive_rng
from trainer.policy import Completion, Message, SamplingConfig

from ..errors import PolicyLoadError

#: What a random policy types where an env can neither list its actions nor draw a random one.
_FALLBACK_ALPHABET = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789 "))


def random_action(env: Any, rng: np.random.Generator) -> str:
    """Uniform over ``valid_actions()``; else the env's ``random_action(rng)``; else 12 random characters.

    Not ``action_space.sample()``: that draws strings up to the space's bound (a million characters behind a
    protocol wrapper), which measures nothing and bloats the store. A short random string is rejected like
    any unparseable reply, which is what a random policy earns on such envs.
    """
    base = env.unwrapped
    actions = base.valid_actions() if hasattr(base, "valid_actions") else None
    if actions:
        return actions[int(rng.integers(len(actions)))]
    if hasattr(base, "random_action"):
        return base.random_action(rng)
    return "".join(rng.choice(_FALLBACK_ALPHABET, size=12)).strip() or "a"


class EnvSidePolicy:
    """``kind`` is ``random`` or ``expert``; one instance per worker (binding is per call, not thread-safe).

    ``random`` draws from a generator seeded by ``sampling.seed`` on every call, so an episode's moves depend
    only on its own seeds, never on which worker played it or in which order (resumed runs repeat exactly).
    """

    def __init__(self, kind: str):
        if kind not in ("random", "expert"):
            raise ValueError(f"kind must be 'random' or 'expert', got {kind!r}")
        self.kind = kind
        self._envs: list[Any] = []

    def bind(self, envs: Sequence[Any]) -> None:
        """The env behind each chat of the next ``act`` (protocol-wrapped, so replies use its format)."""
        self._envs = list(envs)

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        if len(batch) != len(self._envs):
            raise ValueError(f"expected one chat per bound env ({len(self._envs)}), got {len(batch)}; call bind(envs) first")
        # A separate stream from the env's own seed: equal integers would make the agent's first draw mirror the
        # env's (e.g. guess the very word a puzzle drew).
        rng = derive_rng(0 if sampling.seed is None else sampling.seed, 0xA6E7)
        return [Completion(self._render(env, self._action(env, rng))) for env in self._envs]

    def _action(self, env: Any, rng: np.random.Generator) -> str:
        if self.kind == "random":
            return random_action(env, rng)
        base = env.unwrapped
        if not hasattr(base, "expert_action"):
            raise PolicyLoadError(f"the expert policy needs a scripted expert, and {base.spec.id if base.spec else base} "
                                  "has no expert_action(); leave it out of the suite or use another policy")
        return base.expert_action()

    @staticmethod
    def _render(env: Any, action: str) -> str:
        protocol = getattr(env, "protocol", None)
        return protocol.render(action, env.unwrapped) if protocol is not None else action
