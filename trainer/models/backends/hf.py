"""Hugging Face transformers backend: batched sampling with exact ids and per-token log-probs.

The sampling loop is ours (a KV-cached forward per token) rather than ``model.generate``, for three
reasons: the log-prob of each sampled token is recorded from the same tempered distribution it was drawn
from (the number the trainer must reproduce), every draw comes from a ``torch.Generator`` seeded by
``SamplingConfig.seed`` (no global RNG), and the ids returned are exactly the ids sampled.

The trainer and this policy share one ``model`` object, so there is no weight sync to forget. Within
:meth:`HFPolicy.reusing_prefixes` (each collection and evaluation) a turn's prefill reuses the keys and
values of the episode's earlier turns (:mod:`trainer.models.backends.prefix_cache`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Sequence
from typing import Any

import torch

from agentgym_envs.policies import Completion, SamplingConfig

from . import prefix_cache
from .chat_tokens import ChatTokens


class HFPolicy(ChatTokens):
    """A causal LM and its tokenizer as a :class:`~agentgym_envs.policies.TokenPolicy`.

    Args:
        model: a ``transformers`` causal LM (its ``forward`` takes ``past_key_values``).
        tokenizer: its tokenizer, with a chat template and an EOS token.
        max_batch: prompts decoded together; larger batches are split (the generator stream continues).
        chat_template_kwargs: extra variables for ``apply_chat_template`` (e.g. ``enable_thinking``).
        prefix_cache_mb: the most memory the rows' keys and values kept between turns may take inside
            :meth:`reusing_prefixes` (0: never reuse).
    """

    def __init__(self, model: Any, tokenizer: Any, *, max_batch: int = 64, chat_template_kwargs: dict | None = None,
                 prefix_cache_mb: float = 1024):
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token; set one (the end-of-turn token) before sampling")
        self.model, self.tokenizer, self.max_batch = model, tokenizer, max_batch
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.stop_ids = _stop_ids(model, tokenizer)
        self.prefixes = prefix_cache.PrefixStore(int(prefix_cache_mb * 2**20))
        # transformers >= 5.2x names the KV cache ``cache``; older releases ``past_key_values``.
        base = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft wraps forward(**kwargs)
        self._cache_arg = "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"

    # Policy.act, render_chat, encode_chat, encode, decode: from ChatTokens

    def reusing_prefixes(self):
        """A context in which consecutive ``generate`` calls of this thread reuse the keys and values of the
        ids a previous call's rows already encoded (an episode's earlier turns); outside it nothing is kept."""
        return self.prefixes.scope()

    def use_model(self, model: Any) -> None:
        """Sample with ``model`` from now on (same architecture and tokenizer: an async collector's newer weight
        snapshot). An open :meth:`reusing_prefixes` scope stays open but forgets the old weights' keys and
        values, so the scope keeps serving the episodes' later turns without mixing two versions."""
        self.model = model
        self.prefixes.forget()

    # ----------------------------------------------------------------- TokenPolicy
    @torch.no_grad()
    def generate(self, prompt_ids: list[list[int]], *, sampling: SamplingConfig,
                 seeds: Sequence[int] | None = None) -> list[Completion]:
        """One completion per prompt; deterministic for a given seed, prompts and weights.

        ``seeds`` (one per prompt) gives each row its own generator, so a prompt's draws do not depend on the
        batch it is in or its row (distributed collection keys them by the episode's global index); without
        them one generator seeded by ``sampling.seed`` serves the whole batch, row after row."""
        if seeds is not None and len(seeds) != len(prompt_ids):
            raise ValueError(f"expected one seed per prompt ({len(prompt_ids)}), got {len(seeds)} seeds")
        generators: list[torch.Generator] | None = None
        if seeds is not None:
            generators = [torch.Generator(device=self._device()).manual_seed(int(s) % 2**63) for s in seeds]
        generator = torch.Generator(device=self._device())
        # seed=None: fresh OS entropy, without reseeding torch's global generator as torch.seed() would
        generator.manual_seed(sampling.seed if sampling.seed is not None else int.from_bytes(os.urandom(7), "little"))
        was_training = self.model.training
        self.model.eval()
        try:
            scope = self.prefixes.active(self.model) if self.prefixes.max_bytes > 0 else None
            out: list[Completion] = []
            for start in range(0, len(prompt_ids), self.max_batch):
                rows = generator if generators is None else generators[start:start + self.max_batch]
                out.extend(self._generate_batch(prompt_ids[start:start + self.max_batch], sampling, rows, scope))
            if scope is not None:
                scope.rotate()
            return out
        finally:
            self.model.train(was_training)

    def _generate_batch(self, prompts: list[list[int]], sampling: SamplingConfig,
                        generator: torch.Generator | list[torch.Generator],
                        scope: prefix_cache.Scope | None = None) -> list[Completion]:
        reuse = scope.match(prompts) if scope is not None else []
        if any(r.entry is not None for r in reuse):  # (B, S) new ids after (B, C) reused keys and values
            input_ids, attention_mask, position_ids, cache = prefix_cache.assemble(prompts, reuse, self.pad_id,
                                                                                  self._device())
        else:
            input_ids, attention_mask = _left_pad(prompts, self.pad_id, self._device())  # (B, L)
            position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
            cache = None
        B = len(prompts)
        tokens: list[list[int]] = [[] for _ in range(B)]
        logprobs: list[list[float]] = [[] for _ in range(B)]
        finished = torch.zeros(B, dtype=torch.bool)
        head = _float32_head(self.model)
        for _ in range(sampling.max_new_tokens):
            logits, cache = self._next_logits(input_ids, attention_mask, position_ids, cache, head)  # (B, V) fp32
            token, token_logprob = sample_token(logits, sampling, generator)  # (B,), (B,)
            for b in (~finished).nonzero().flatten().tolist():
                tokens[b].append(int(token[b]))
                logprobs[b].append(float(token_logprob[b]))
                finished[b] = self._stopped(tokens[b], sampling)
            if bool(finished.all()):
                break
            input_ids = torch.where(finished.to(token.device), self.pad_id, token)[:, None]
            attention_mask = torch.cat([attention_mask, torch.ones_like(attention_mask[:, :1])], dim=1)
            position_ids = position_ids[:, -1:] + 1
        if scope is not None:
            layers = prefix_cache.plain_layers(cache)
            if layers is not None:
                prefix_cache.keep_rows(scope, layers, attention_mask, prompts, tokens, self.prefixes.max_bytes)
        return [self._completion(t, lp, bool(f)) for t, lp, f in zip(tokens, logprobs, finished)]

    def _next_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                     cache: Any, head: torch.Tensor | None) -> tuple[torch.Tensor, Any]:
        """(B, V) float32 logits of the next token and the grown KV cache. With ``head`` (a low-precision
        model's output projection, in float32) the logits are ``h.float() @ head.T``, the trainer's scoring
        maths (:mod:`trainer.learn.kernels`): a bf16 head would round logits near 20 to steps of 0.125."""
        kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=True,
                      **{self._cache_arg: cache})
        if head is None:
            out = self.model(**kwargs, logits_to_keep=1)
            return out.logits[:, -1].float(), out[self._cache_arg]
        out = self.model.get_decoder()(**kwargs)
        return out.last_hidden_state[:, -1].float() @ head.T, out[self._cache_arg]

    def _stopped(self, ids: list[int], sampling: SamplingConfig) -> bool:
        if ids[-1] in self.stop_ids:
            return True
        if sampling.stop:
            text = self.decode(ids[-32:])  # stop strings are short; the tail of the reply is enough
            return any(s in text for s in sampling.stop)
        return False

    def _completion(self, ids: list[int], logprobs: list[float], stopped: bool) -> Completion:
        """The text leaves out a final end-of-turn id (the chat template writes that one itself)."""
        ended = ids[-1] in self.stop_ids
        return Completion(self.decode(ids[:-1] if ended else ids), ids, logprobs, "stop" if stopped else "length")

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device


def sample_token(logits: torch.Tensor, sampling: SamplingConfig,
                 generator: torch.Generator | Sequence[torch.Generator]) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row of ``logits`` (B, V); return it and its log-prob under ``softmax(logits / T)``.

    Greedy (T = 0) reports the log-prob at T = 1. Top-p restricts the draw, not the reported log-prob.
    ``generator`` is one for the batch, or one per row (each row then draws from its own only).
    """
    temperature = 1.0 if sampling.greedy else sampling.temperature
    logp = torch.log_softmax(logits / temperature, dim=-1)  # (B, V)
    if sampling.greedy:
        token = logp.argmax(dim=-1)
    else:
        probs = logp.exp()
        if sampling.top_p < 1.0:
            probs = _nucleus(probs, sampling.top_p)
        if isinstance(generator, torch.Generator):
            token = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        else:
            token = torch.cat([torch.multinomial(row[None], 1, generator=g)[:, 0] for row, g in zip(probs, generator)])
    return token, logp.gather(-1, token[:, None]).squeeze(-1)


def _float32_head(model: Any) -> torch.Tensor | None:
    """The (V, H) output projection in float32 when the model's is in a lower precision (bf16), else ``None``
    (a float32 model samples through its own forward, unchanged)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    capped = getattr(getattr(model, "config", None), "final_logit_softcapping", None)  # Gemma 2 caps its logits
    if weight is None or weight.dtype == torch.float32 or getattr(head, "bias", None) is not None or capped:
        return None
    return weight.detach().float()


def _nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """``probs`` (B, V) with everything outside the smallest set of mass >= top_p zeroed."""
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    outside = sorted_probs.cumsum(-1) - sorted_probs > top_p  # keep the token that crosses top_p
    sorted_probs = sorted_probs.masked_fill(outside, 0.0)
    return torch.zeros_like(probs).scatter(-1, order, sorted_probs)


def _left_pad(prompts: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token; got an empty prompt")
    L = max(len(p) for p in prompts)
    input_ids = torch.full((len(prompts), L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), L), dtype=torch.long)
    for b, p in enumerate(prompts):
        input_ids[b, L - len(p):] = torch.tensor(p, dtype=torch.long)
        attention_mask[b, L - len(p):] = 1
    return input_ids.to(device), attention_mask.to(device)


def _stop_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """The tokenizer's EOS plus any end-of-turn ids the model's generation config names (Qwen has two)."""
    ids = {int(tokenizer.eos_token_id)}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if configured is not None:
        ids.update(int(i) for i in (configured if isinstance(configured, (list, tuple)) else [configured]))
    return frozenset(ids)
