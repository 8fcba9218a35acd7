"""The policy contract: chat messages in, completions (text, exact token ids, sampling log-probs) out.

Everything that plays an env implements :class:`Policy`: model backends (``trainer/models/backends/``: Hugging
Face, vLLM, OpenAI-compatible HTTP) and the env-side baselines (:mod:`agentgym_envs.policies.env_side`).
Model backends also implement :class:`TokenPolicy`, the token-in/token-out form that rollouts use so that
ids are never re-tokenised between sampling and training (``docs/trainer.md``). Policies that act from the
env's state rather than from the chat also implement :class:`EnvBoundPolicy`: whoever drives the episode
binds them to the env behind each chat before every ``act``.

A chat of a tool-calling episode (the ``tool_calls`` protocol) is an :class:`~agentgym_envs.chat.Chat`: a list
of messages that also carries the ``tools`` the model may call, with ``tool`` messages for the results.
Model backends show the tools to the model (``render_chat`` passes them to the chat template; the HTTP
backend sends them in the request); a policy that ignores them still receives a plain list of messages.

The contract lives in the env package, the lowest layer, so that envs, games, the trainer and the
leaderboards all import it from one place and no import points upwards (``docs/architecture.md``).

>>> SamplingConfig(temperature=0.0).greedy
True
>>> Completion("go to bed 1", [5, 9], [-0.1, -0.2], "stop").num_tokens
2
>>> SamplingConfig(top_p=0)
Traceback (most recent call last):
...
ValueError: top_p must be in (0, 1], got 0; use 1.0 to sample from the full distribution
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..chat import Message
from ..core.errors import NoExpert

__all__ = ["Message", "SamplingConfig", "Completion", "Policy", "TokenPolicy", "EnvBoundPolicy", "FinishReason",
           "NoExpert"]

#: ``stop``: end-of-turn token or a stop string; ``length``: ``max_new_tokens`` reached.
FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class SamplingConfig:
    """How to sample one completion per prompt."""

    temperature: float = 1.0
    """Softmax temperature; 0 means greedy. Log-probs are reported at this temperature (1.0 when greedy)."""
    top_p: float = 1.0
    """Nucleus sampling mass in (0, 1]. Log-probs stay those of the full tempered distribution, which
    is what the trainer recomputes; keep 1.0 for on-policy RL."""
    max_new_tokens: int = 32
    """Longest completion, in tokens."""
    stop: tuple[str, ...] = ()
    """Strings that end a completion (kept in its text and ids, so the ids stay exactly what was sampled)."""
    seed: int | None = 0
    """Seeds the sampler's own generator: the same seed, prompts and weights give the same completions."""

    def __post_init__(self) -> None:
        if not (self.temperature >= 0 and math.isfinite(self.temperature)):
            raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}; use 1.0 to sample from the full distribution")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"stop must be a tuple of non-empty strings, got {self.stop!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass
class Completion:
    """One sampled reply: its text and the exact ids and log-probs the sampler produced.

    ``token_ids`` include the end-of-turn token when the model emitted one; ``text`` is their decoding
    without special tokens. Text-only policies (env-side baselines, HTTP) leave ids and log-probs empty.
    """

    text: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: FinishReason = "stop"

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)


@runtime_checkable
class Policy(Protocol):
    """Anything that answers a batch of chats: one completion per chat."""

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]: ...


@runtime_checkable
class TokenPolicy(Policy, Protocol):
    """A model policy that also samples from token ids directly (what rollouts use).

    ``render_chat`` applies the chat template (ending with the generation prompt; a
    :class:`~agentgym_envs.chat.Chat`'s tools go to the template too), ``encode`` turns text
    the template inserted into ids, and ``decode`` turns sampled ids back into text with special tokens
    kept, so that the template renders a reply exactly as it was sampled.
    """

    def render_chat(self, messages: Sequence[Message]) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def generate(self, prompt_ids: list[list[int]], *, sampling: SamplingConfig,
                 seeds: Sequence[int] | None = None) -> list[Completion]:
        """One completion per prompt. ``seeds`` (optional, one per prompt) seeds each prompt's draws on their
        own, so a completion does not depend on its batch or row; without them ``sampling.seed`` seeds the batch."""
        ...


@runtime_checkable
class EnvBoundPolicy(Protocol):
    """A policy that reads the env behind each chat: ``bind(envs)`` (one per chat of the next ``act``).

    The envs may be wrapped (an :class:`~agentgym_envs.protocols.ActionProtocolWrapper`): the policy acts
    from ``env.unwrapped`` and may render its reply in the wrapper's protocol.
    """

    def bind(self, envs: Sequence[Any]) -> None: ...
