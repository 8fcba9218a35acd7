"""Packing trajectories into padded tensors and recomputing their log-probs with the trainer's model.

The recomputation runs the decoder once over each whole episode, keeps the final hidden states only at
positions that predict a sampled token, and sends those through :func:`trainer.learn.kernels.linear_logprob_entropy`
with the output projection, so full [tokens × vocab] logits never exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..collect.trajectory import Trajectory
from .kernels import linear_logprob_entropy
from .shared_prefix import common_prefix, decoder_hidden


@dataclass
class PackedBatch:
    """Right-padded (B, T) tensors of a list of trajectories."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    sampling_logprobs: torch.Tensor
    advantages: torch.Tensor
    value_targets: torch.Tensor | None = None
    """(B, T) critic targets at each turn's start position, NaN elsewhere (PPO only)."""
    old_logprobs: torch.Tensor | None = None
    """(B, T) the trainer's ``π_old`` recomputed before the update (rollout correction on), else None."""
    is_weights: torch.Tensor | None = None
    """(B, T) the rollout correction's TIS weights (``loss.rollout_correction=tis_*``), else None."""
    observed: torch.Tensor | None = None
    """(B, T) bool: ECHO's observation tokens (:func:`trainer.learn.loss.observation_mask`), else None."""
    shared_prefix: int = 0
    """Leading ids every row has in common, run through the decoder once (:mod:`trainer.learn.shared_prefix`);
    0: one full forward."""

    @property
    def num_tokens(self) -> int:
        return int(self.loss_mask.sum())


def pack(trajectories: Sequence[Trajectory], pad_id: int, advantages: Sequence[Sequence[float]] | None = None,
         device: torch.device | str = "cpu", value_targets: Sequence[Sequence[float]] | None = None, *,
         share_prefix: bool = False) -> PackedBatch:
    """Right-pad every per-token list of ``trajectories`` (and per-token ``advantages``) to one length; with
    ``share_prefix``, mark the rows' common leading ids to be run once (:mod:`trainer.learn.shared_prefix`)."""
    T = max(len(t.token_ids) for t in trajectories)

    def padded(rows: Sequence[Sequence[Any]], value, dtype) -> torch.Tensor:
        out = torch.full((len(rows), T), value, dtype=dtype)
        for b, row in enumerate(rows):
            out[b, :len(row)] = torch.tensor(list(row), dtype=dtype)
        return out.to(device)

    advantages = advantages if advantages is not None else [[0.0] * len(t.token_ids) for t in trajectories]
    input_ids = padded([t.token_ids for t in trajectories], pad_id, torch.long)
    return PackedBatch(
        input_ids=input_ids,
        attention_mask=padded([[1] * len(t.token_ids) for t in trajectories], 0, torch.long),
        loss_mask=padded([t.loss_mask for t in trajectories], 0, torch.long),
        sampling_logprobs=padded([t.sampling_logprobs for t in trajectories], 0.0, torch.float32),
        advantages=padded(advantages, 0.0, torch.float32),
        value_targets=None if value_targets is None else padded(value_targets, float("nan"), torch.float32),
        shared_prefix=common_prefix(input_ids, [len(t.token_ids) for t in trajectories]) if share_prefix else 0,
    )


def output_layer(model: Any) -> tuple[Any, torch.Tensor]:
    """The decoder (ids -> final normed hidden states) and the (V, H) output projection of a causal LM."""
    head = model.get_output_embeddings()
    if getattr(head, "bias", None) is not None:
        raise ValueError("output projections with a bias are not supported by the chunked log-prob path")
    if getattr(getattr(model, "config", None), "final_logit_softcapping", None):  # Gemma 2: cap * tanh(logits / cap)
        raise ValueError("models with final_logit_softcapping (Gemma 2) are not supported by the chunked log-prob "
                         "path: it would score uncapped logits; use a model without it (e.g. Gemma 3)")
    return model.get_decoder(), head.weight


def token_logprobs(model: Any, batch: PackedBatch, *, temperature: float = 1.0, backend: str = "auto",
                   return_hidden: bool = False, observed: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """(B, T) log-probs and entropies of the sampled tokens (0 elsewhere), differentiable.

    Position ``t`` holds ``log π(x_t | x_<t)``, aligned with ``loss_mask`` and ``sampling_logprobs``.
    With ``return_hidden`` the (B, T, H) final hidden states come third (the critic reads them). With
    ``observed`` (a (B, T) mask, ECHO's observation tokens) the (B, T) log-probs of those tokens at
    temperature 1 (the model's own likelihood) come last, from the same hidden states and kernel.
    """
    decoder, _ = output_layer(model)
    # no KV cache kept: nothing decodes after this forward (a shared prefix's cache lives for this call only)
    hidden = decoder_hidden(decoder, batch.input_ids, batch.attention_mask, batch.shared_prefix)  # (B, T, H)
    weight = output_layer(model)[1]  # read after the forward: under FSDP2 it gathers the projection (trainer/run/distributed.py)
    b, t = batch.loss_mask[:, 1:].nonzero(as_tuple=True)  # hidden at t predicts token t + 1
    logprobs, entropies = linear_logprob_entropy(hidden[b, t], weight, batch.input_ids[b, t + 1],
                                                 temperature=temperature, backend=backend)  # (N,), (N,)
    B, T = batch.input_ids.shape
    dense_lp = torch.zeros(B, T, dtype=logprobs.dtype, device=logprobs.device).index_put((b, t + 1), logprobs)
    dense_ent = torch.zeros(B, T, dtype=entropies.dtype, device=entropies.device).index_put((b, t + 1), entropies)
    out = (dense_lp, dense_ent, hidden) if return_hidden else (dense_lp, dense_ent)
    if observed is not None:
        ob, ot = observed[:, 1:].nonzero(as_tuple=True)
        obs_lp, _ = linear_logprob_entropy(hidden[ob, ot], weight, batch.input_ids[ob, ot + 1], backend=backend)
        out = (*out, torch.zeros(B, T, dtype=obs_lp.dtype, device=obs_lp.device).index_put((ob, ot + 1), obs_lp))
    return out
