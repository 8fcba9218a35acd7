"""A model policy as the skills meta-envs' actor: specs, the actor's own token counts, and its context.

:class:`PolicyActor` puts any agentgym policy (the tiny model, HF, vLLM, an OpenAI-compatible endpoint) in the
actor's seat of :mod:`~meta_envs.skills.utility`. A model reads documents in its own tokens and within its
own context, so budgets are counted with its tokenizer where it has one (:func:`document_tokens`), and a
prompt it cannot read whole is an :class:`ActorContextError` (checked before sampling, or the endpoint's
HTTP 400), which a measurement attributes to whichever document made it so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentgym_envs.core.errors import AgentGymError

from .skill import count_tokens as rule_tokens

if TYPE_CHECKING:
    from .actor import Actor


class ActorContextError(AgentGymError):
    """The actor's prompt does not fit its model's context: a server's context-length refusal (HTTP 400), or
    our own count with the actor's tokenizer before sampling. Whose outcome it is depends on which document
    made the prompt too long (:func:`~meta_envs.skills.utility.measure_utility` tells them apart)."""


#: How OpenAI, vLLM, llama.cpp and ``trainer.serve.policy_server`` word an HTTP 400 for a prompt over the model's context.
_CONTEXT_REFUSAL = re.compile(r"context[ _](length|size|window)|maximum context|exceed\w* the model's context"
                              r"|prompt is too long|too many tokens", re.IGNORECASE)


@dataclass
class PolicyActor:
    """Any agentgym :class:`~agentgym_envs.policies.base.Policy` (the tiny model, HF, vLLM, OpenAI-compatible,
    env-side baselines) as an :class:`Actor`: the chat of the episode so far (system prompt with the skills,
    then observations and replies; the last ``window`` turns) goes to ``policy.act``, the reply is the action.
    The sampler's seed is the episode's seed plus the turn, so both arms of a measurement sample alike.

    A policy with a local tokenizer (HF, vLLM, checkpoints) counts documents in its own tokens
    (:meth:`count_tokens`, what the meta-envs' budgets hold them to) and refuses a prompt over its model's
    context before sampling; an endpoint's context-length refusal (HTTP 400) is the same
    :class:`ActorContextError`, never an opaque endpoint failure."""

    policy: Any
    sampling: Any = None
    window: int | None = 8
    name: str = "policy"
    _history: Any = field(default=None, repr=False)
    _context: dict[str, str] = field(default_factory=dict, repr=False)
    _last: str | None = field(default=None, repr=False)
    _seed: int = 0

    def reset(self, *, instruction: str, system_prompt: str, seed: int) -> None:
        from agentgym_envs.chat import ChatHistory

        self._history, self._last, self._seed = ChatHistory(), None, seed
        self._context = {"instruction": instruction, "system_prompt": system_prompt}

    def act(self, observation: str, info: dict[str, Any]) -> str:
        from dataclasses import replace

        from agentgym_envs.policies.base import SamplingConfig

        if self._last is None:
            self._history.start(observation, self._context)
        else:
            self._history.add(self._last, observation)
        sampling = replace(self.sampling or SamplingConfig(temperature=0.0), seed=self._seed + len(self._history))
        messages = self._history.messages(window=self.window)
        self._check_context(messages, sampling.max_new_tokens)
        try:
            completion = self.policy.act([messages], sampling=sampling)[0]
        except Exception as e:  # noqa: BLE001 — sorted: a context refusal is the prompt's, anything else the policy's
            if getattr(e, "status", None) == 400 and _CONTEXT_REFUSAL.search(str(e)):
                raise ActorContextError(f"the actor's model refused the prompt as too long: {str(e)[:300]}") from e
            raise
        self._last = completion.text if isinstance(completion.text, str) else ""
        return self._last

    def count_tokens(self, text: str) -> int | None:
        """``text``'s length in the actor's own tokens, or ``None`` when its policy has no local tokenizer
        (an HTTP endpoint: its server refuses what does not fit, see :meth:`act`)."""
        encode = getattr(self.policy, "encode", None)
        if not callable(encode):
            tokenizer = getattr(self.policy, "tokenizer", None)
            encode = getattr(tokenizer, "encode", None)
        return len(encode(text)) if callable(encode) else None

    @property
    def context_tokens(self) -> int | None:
        """The model's context in tokens (a vLLM engine's ``max_model_len``, else the HF model's
        ``max_position_embeddings``), or ``None`` when unknown here."""
        config = getattr(getattr(self.policy, "model", None), "config", None)
        context = getattr(self.policy, "max_model_len", None) or getattr(config, "max_position_embeddings", None)
        return context if isinstance(context, int) and context > 0 else None

    def _check_context(self, messages: Any, max_new_tokens: int) -> None:
        """Refuse a prompt the model cannot read before sampling it (a 150k-token prompt would exhaust memory)."""
        encode_chat, context = getattr(self.policy, "encode_chat", None), self.context_tokens
        if not callable(encode_chat) or context is None:
            return
        tokens = len(encode_chat(messages))
        if tokens + max_new_tokens > context:
            raise ActorContextError(f"the actor's prompt is {tokens} tokens and its replies up to {max_new_tokens}; "
                                    f"together they exceed its model's context of {context} tokens")


def document_tokens(actor: Actor, text: str) -> int:
    """``text``'s length as a document budget counts it: the larger of the tokenizer-free rule
    (:func:`~meta_envs.skills.skill.count_tokens`, which bounds hostile text for every actor) and the actor's
    own tokenizer's count when it has one (ten CJK characters are one rule token but may be 30 model tokens)."""
    count = getattr(actor, "count_tokens", None)
    own = count(text) if callable(count) else None
    return max(rule_tokens(text), own or 0)


def actor_from_spec(spec: str | Actor) -> Actor:
    """An actor from a spec: ``procedure`` (the default baseline), or a model policy spec of the leaderboards
    (``hf:tiny``, ``hf:<dir>``, ``vllm:<dir>``, ``openai:<base_url>#<model>``, ``checkpoint:<dir>``) wrapped in
    :class:`PolicyActor`. An :class:`Actor` passes through."""
    if not isinstance(spec, str):
        return spec
    if spec.strip() == "procedure":
        from .actor import ProcedureActor

        return ProcedureActor()
    from leaderboards.policies import parse_spec

    parsed = parse_spec(spec)
    if parsed.env_side:
        raise ValueError(f"expected 'procedure' or a model policy spec (hf:, vllm:, openai:, checkpoint:), got {spec!r}; "
                         f"env-side policies act from the env's state, not from the skills")
    return PolicyActor(parsed.build(), name=parsed.text)
