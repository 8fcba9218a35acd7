"""The clipped policy-gradient loss, its aggregation modes, KL to a reference and the entropy bonus.

All tensors are (B, T) over padded trajectories, with ``loss_mask`` 1 on sampled tokens. The core is PPO's
clipped surrogate with DAPO's asymmetric clip, written as a per-token loss to minimise:

    ratio = exp(clamp(logp - old_logp, ±LOG_RATIO_CLAMP))
    ppo = max(-A · ratio, -A · clip(ratio, 1 - ε_low, 1 + ε_high))
    per_token = min(ppo, -A · c) where A < 0 (dual-clip), ppo elsewhere
    loss = aggregate(per_token) + β · aggregate(KL(π ‖ π_ref)) - c_H · aggregate(entropy)

Dual-clip (Ye et al. 2020, "Mastering Complex Control in MOBA Games with Deep Reinforcement Learning",
arXiv:1912.09729) bounds the loss of a negative-advantage token by ``-A · c`` (``c = clip_ratio_c``, 3 by
default): PPO's clip leaves ``-A · ratio`` unbounded above for A < 0, so one token whose ratio blew up
(stale minibatch, a separate sampler) would dominate the batch. The log-ratio clamp keeps ``exp`` finite;
``k3`` clamps its log-ratio the same way and its value to ``[-K3_CLAMP, K3_CLAMP]``. On-policy
(ratio near 1) none of these bounds is reached and the numbers equal the plain clipped loss bit for bit.

Variants are entries in small dicts (``AGGREGATIONS``, ``KL_ESTIMATORS``), not branches on strings.

Gradient accumulation and data parallelism: each aggregation is a sum over tokens (or rows) divided by a
count of the whole batch (:class:`BatchCounts`: sampled tokens, rows, critic targets). :func:`batch_counts`
counts a batch once, through :func:`global_sum` (identity, or an all-reduce SUM across the ranks of an
initialised ``torch.distributed`` group); a micro-batch's loss computed with those counts is its *share*
of the whole batch's loss, so summing the shares' gradients (``backward`` per micro-batch, and SUM across
ranks, not DDP's mean) gives exactly the gradient of the whole batch in one forward. A row is one token
segment (an episode, a folded part of one, or a turn in turn mode), so ``sequence_mean`` averages over
segments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


LOG_RATIO_CLAMP = 20.0
"""Bound on ``|log π - log π_old|`` (and on k3's log-ratio) before ``exp``: e^20 ≈ 4.9e8 stays finite in
fp32 and bf16, e^89 would not. Outside the bound the token's ratio is constant (no gradient through it)."""
K3_CLAMP = 10.0
"""Bound on a token's k3 value (k3 ≥ 0, so in effect ``≤ 10``); the unclamped value is ~e^|Δ|."""


@dataclass(frozen=True)
class BatchCounts:
    """What the aggregations divide by, counted over a whole batch (all its micro-batches, all ranks)."""

    tokens: float
    """Sampled tokens (``loss_mask`` 1)."""
    rows: float
    """Rows: token segments, the "sequences" of ``sequence_mean`` and the B of ``token_sum_norm``."""
    value_targets: float = 0.0
    """Positions with a critic target (PPO's value loss is their mean)."""


def global_sum(values: torch.Tensor) -> torch.Tensor:
    """``values`` summed over the ranks of the default ``torch.distributed`` group; itself when there is none.

    Every rank must call it the same number of times (it is a collective), with a tensor on the backend's
    device (CPU for gloo, CUDA for nccl)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        values = values.clone()
        torch.distributed.all_reduce(values, op=torch.distributed.ReduceOp.SUM)
    return values


def batch_counts(loss_masks: Sequence[torch.Tensor], value_targets: Sequence[torch.Tensor | None] = (), *,
                 reduce: Callable[[torch.Tensor], torch.Tensor] = global_sum) -> BatchCounts:
    """The normalisers of a whole batch given as its micro-batches: sampled tokens and rows of each
    ``loss_masks[i]`` (B_i, T_i), critic targets of each ``value_targets[i]`` (B_i, T_i, NaN where none),
    summed over the micro-batches and then by ``reduce`` (:func:`global_sum`: across ranks, one collective)."""
    local = torch.zeros(3, dtype=torch.float64, device=loss_masks[0].device)
    for mask in loss_masks:
        local[0] += mask.sum()
        local[1] += mask.shape[0]
    for targets in value_targets:
        if targets is not None:
            local[2] += (~torch.isnan(targets)).sum()
    tokens, rows, target_count = reduce(local).tolist()
    return BatchCounts(tokens, rows, target_count)


def _counted(mask: torch.Tensor, counts: BatchCounts | None) -> BatchCounts:
    """``counts``, or this mask's own (a batch in one forward on one rank)."""
    return counts if counts is not None else batch_counts([mask], reduce=lambda t: t)


def token_mean(values: torch.Tensor, mask: torch.Tensor, max_tokens: int, counts: BatchCounts | None = None) -> torch.Tensor:
    """DAPO's token-level mean: every sampled token of the batch weighs the same (long replies count more)."""
    return (values * mask).sum() / max(_counted(mask, counts).tokens, 1.0)


def sequence_mean(values: torch.Tensor, mask: torch.Tensor, max_tokens: int, counts: BatchCounts | None = None) -> torch.Tensor:
    """GRPO's original: the mean over tokens of each sequence (row), then over the batch's rows."""
    per_sequence = (values * mask).sum(-1) / mask.sum(-1).clamp(min=1)  # (B,)
    return per_sequence.sum() / max(_counted(mask, counts).rows, 1.0)


def token_sum_norm(values: torch.Tensor, mask: torch.Tensor, max_tokens: int, counts: BatchCounts | None = None) -> torch.Tensor:
    """Dr.GRPO: token sum divided by a constant (B × max_tokens), so length does not bias the gradient."""
    return (values * mask).sum() / (max(_counted(mask, counts).rows, 1.0) * max_tokens)


Aggregation = Callable[[torch.Tensor, torch.Tensor, int, BatchCounts | None], torch.Tensor]


AGGREGATIONS: dict[str, Aggregation] = {
    "token_mean": token_mean, "sequence_mean": sequence_mean, "token_sum_norm": token_sum_norm,
}


def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """``log π - log π_ref``: unbiased for KL(π ‖ π_ref) under samples of π, high variance, can be negative."""
    return logp - ref_logp


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's ``exp(-x) + x - 1`` with ``x = log π - log π_ref``: unbiased, non-negative, low variance."""
    log_ratio = (ref_logp - logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    return (log_ratio.exp() - log_ratio - 1).clamp(-K3_CLAMP, K3_CLAMP)


KL_ESTIMATORS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {"k1": kl_k1, "k3": kl_k3}


@dataclass(frozen=True)
class LossSettings:
    """The loss's knobs (a view of the loss config)."""

    clip_low: float = 0.2
    clip_high: float = 0.28
    aggregation: str = "token_mean"
    kl_coef: float = 0.0
    kl_estimator: str = "k3"
    entropy_coef: float = 0.0
    max_tokens: int = 512
    """Dr.GRPO's constant normaliser (``token_sum_norm``): the longest generation budget per trajectory."""
    clip_ratio_c: float = 3.0
    """Dual-clip bound: a token with A < 0 loses at most ``-A · clip_ratio_c`` (must be > 1)."""


def clipped_token_loss(log_ratio: torch.Tensor, advantages: torch.Tensor,
                       settings: LossSettings) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token dual-clipped PPO loss, and where the PPO clip and the dual clip were the terms used.

    ``clipped`` is True where ``-A · clip(ratio)`` is strictly greater than ``-A · ratio`` (so the clipped
    term, with no gradient, is the one in the loss); ``dual`` is True where A < 0 and the dual bound
    ``-A · c`` is strictly below the PPO term (so the constant bound is used). Both are False where A = 0.
    """
    ratio = log_ratio.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP).exp()
    unclipped = -advantages * ratio
    clipped_term = -advantages * ratio.clamp(1 - settings.clip_low, 1 + settings.clip_high)
    ppo = torch.maximum(unclipped, clipped_term)
    bound = -advantages * settings.clip_ratio_c
    negative = advantages < 0
    per_token = torch.where(negative, torch.minimum(ppo, bound), ppo)
    return per_token, clipped_term > unclipped, negative & (ppo > bound)


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, loss_mask: torch.Tensor,
                settings: LossSettings, *, entropy: torch.Tensor | None = None,
                ref_logp: torch.Tensor | None = None,
                counts: BatchCounts | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """The scalar loss to minimise and its diagnostics (clip fractions, KL, entropy, approx-KL to old).

    Args (all (B, T)): current log-probs (with grad), the log-probs the data was sampled with, per-token
    advantages, the loss mask; optionally entropies (with grad) and a reference policy's log-probs.
    ``counts``: the normalisers of the whole batch this is a micro-batch of (:func:`batch_counts`); then
    the loss and every metric are this micro-batch's share, and summing them over the micro-batches gives
    the whole batch's. ``None``: this is the whole batch.

    ``clip_fraction`` is the fraction of masked tokens (``loss_mask`` 1) where PPO's clipped term
    ``-A · clip(ratio, 1 - ε_low, 1 + ε_high)`` is strictly greater than ``-A · ratio`` and so is the term
    used (a ratio outside the range on the side where A pushes it further; A = 0 never counts);
    ``clip_fraction_dual`` the fraction where the dual-clip bound ``-A · c`` is the term used.
    """
    mask = loss_mask.float()
    counts = _counted(mask, counts)

    def aggregate(values: torch.Tensor) -> torch.Tensor:
        return AGGREGATIONS[settings.aggregation](values, mask, settings.max_tokens, counts)

    per_token, clipped, dual = clipped_token_loss(logp - old_logp, advantages, settings)
    loss = aggregate(per_token)
    metrics = {"pg_loss": float(loss.detach()),
               "clip_fraction": float(token_mean(clipped.float(), mask, 0, counts)),
               "clip_fraction_dual": float(token_mean(dual.float(), mask, 0, counts)),
               "approx_kl_old": float(token_mean(kl_k3(logp.detach(), old_logp), mask, 0, counts))}
    if ref_logp is not None:
        kl = KL_ESTIMATORS[settings.kl_estimator](logp, ref_logp)
        kl_value = aggregate(kl)
        metrics["kl_ref"] = float(kl_value.detach())
        if settings.kl_coef:
            loss = loss + settings.kl_coef * kl_value
    if entropy is not None:
        entropy_value = aggregate(entropy)
        metrics["entropy"] = float(token_mean(entropy.detach(), mask, 0, counts))
        if settings.entropy_coef:
            loss = loss - settings.entropy_coef * entropy_value
    return loss, metrics
