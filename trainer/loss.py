"""The clipped policy-gradient loss, its aggregation modes, KL to a reference and the entropy bonus.

All tensors are (B, T) over padded trajectories, with ``loss_mask`` 1 on sampled tokens. The core is four
lines (PPO's clipped surrogate with DAPO's asymmetric clip):

    ratio = exp(logp - old_logp)
    surrogate = min(ratio · A, clip(ratio, 1 - ε_low, 1 + ε_high) · A)
    loss = aggregate(-surrogate) + β · aggregate(KL(π ‖ π_ref)) - c_H · aggregate(entropy)

Variants are entries in small dicts (``AGGREGATIONS``, ``KL_ESTIMATORS``), not branches on strings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

Aggregation = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor]


def token_mean(values: torch.Tensor, mask: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """DAPO's token-level mean: every sampled token of the batch weighs the same (long replies count more)."""
    return (values * mask).sum() / mask.sum().clamp(min=1)


def sequence_mean(values: torch.Tensor, mask: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """GRPO's original: the mean over tokens of each sequence, then over sequences."""
    per_sequence = (values * mask).sum(-1) / mask.sum(-1).clamp(min=1)  # (B,)
    return per_sequence.mean()


def token_sum_norm(values: torch.Tensor, mask: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """Dr.GRPO: token sum divided by a constant (B × max_tokens), so length does not bias the gradient."""
    return (values * mask).sum() / (values.shape[0] * max_tokens)


AGGREGATIONS: dict[str, Aggregation] = {
    "token_mean": token_mean, "sequence_mean": sequence_mean, "token_sum_norm": token_sum_norm,
}


def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """``log π - log π_ref``: unbiased for KL(π ‖ π_ref) under samples of π, high variance, can be negative."""
    return logp - ref_logp


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's ``exp(-x) + x - 1`` with ``x = log π - log π_ref``: unbiased, non-negative, low variance."""
    log_ratio = ref_logp - logp
    return log_ratio.exp() - log_ratio - 1


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


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, loss_mask: torch.Tensor,
                settings: LossSettings, *, entropy: torch.Tensor | None = None,
                ref_logp: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """The scalar loss to minimise and its diagnostics (clip fraction, KL, entropy, approx-KL to old).

    Args (all (B, T)): current log-probs (with grad), the log-probs the data was sampled with, per-token
    advantages, the loss mask; optionally entropies (with grad) and a reference policy's log-probs.
    """
    aggregate = AGGREGATIONS[settings.aggregation]
    mask = loss_mask.float()
    ratio = torch.exp(logp - old_logp)  # (B, T)
    clipped = ratio.clamp(1 - settings.clip_low, 1 + settings.clip_high)
    surrogate = torch.minimum(ratio * advantages, clipped * advantages)
    loss = aggregate(-surrogate, mask, settings.max_tokens)
    metrics = {"pg_loss": float(loss.detach()),
               "clip_fraction": float(token_mean(((ratio - clipped).abs() > 0).float(), mask, 0)),
               "approx_kl_old": float(token_mean(kl_k3(logp.detach(), old_logp), mask, 0))}
    if ref_logp is not None:
        kl = KL_ESTIMATORS[settings.kl_estimator](logp, ref_logp)
        kl_value = aggregate(kl, mask, settings.max_tokens)
        metrics["kl_ref"] = float(kl_value.detach())
        if settings.kl_coef:
            loss = loss + settings.kl_coef * kl_value
    if entropy is not None:
        entropy_value = aggregate(entropy, mask, settings.max_tokens)
        metrics["entropy"] = float(token_mean(entropy.detach(), mask, 0))
        if settings.entropy_coef:
            loss = loss - settings.entropy_coef * entropy_value
    return loss, metrics
