"""The clipped policy-gradient loss, its aggregation modes, KL to a reference and the entropy bonus.

All tensors are (B, T) over padded trajectories, with ``loss_mask`` 1 on sampled tokens. The core is PPO's
clipped surrogate with DAPO's asymmetric clip, written as a per-token loss to minimise:

    ratio = exp(clamp(logp - old_logp, ±LOG_RATIO_CLAMP))
    ppo = max(-A · ratio, -A · clip(ratio, 1 - ε_low, 1 + ε_high))
    per_token = min(ppo, -A · c) where A < 0 (dual-clip), ppo elsewhere
    loss = aggregate(w · per_token) + β · aggregate(KL(π ‖ π_ref)) - c_H · aggregate(entropy)
           + λ_echo · mean over observation tokens of -log π(observation token)

``policy_loss`` picks the per-token policy term (:data:`POLICY_LOSSES`: ``ppo`` above, ``gspo`` with a
sequence-level ratio, ``cispo`` with a clipped stop-gradient IS weight); ``w`` is the rollout correction's
truncated IS weight (:func:`rollout_correction`, 1 when off); the last term is ECHO (:func:`echo_loss`).

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
from dataclasses import dataclass, replace

import torch

from ..errors import require


LOG_RATIO_CLAMP = 20.0
"""Bound on ``|log π - log π_old|`` (and on k3's log-ratio) before ``exp``: e^20 ≈ 4.9e8 stays finite in
fp32 and bf16, e^89 would not. Outside the bound the token's ratio is constant (no gradient through it)."""
K3_CLAMP = 10.0
"""Bound on a token's k3 value (k3 ≥ 0, so in effect ``≤ 10``); the unclamped value is ~e^|Δ|."""


@dataclass
class LossConfig:
    """The clipped policy-gradient loss (see :mod:`trainer.learn.loss`)."""

    clip_low: float = 0.2
    clip_high: float = 0.28
    aggregation: str = "token_mean"
    kl_coef: float = 0.0
    kl_estimator: str = "k3"
    entropy_coef: float = 0.0
    kernel_backend: str = "auto"
    clip_ratio_c: float = 3.0
    """Dual-clip bound (Ye et al. 2020): a token with a negative advantage A loses at most ``-A · clip_ratio_c``
    however large its ratio grew off-policy (minibatches > 1, a separate sampler). Must be > 1; verl's default
    is 3. On-policy the ratio stays near 1 and the bound is never used."""
    policy_loss: str = "ppo"
    """The per-token policy term (:data:`trainer.learn.loss.POLICY_LOSSES`): ``ppo`` (dual-clipped PPO/DAPO),
    ``gspo`` (sequence-level ratio, its own clip range below), ``cispo`` (clipped stop-gradient IS weight
    times ``A · log π``, clipped by ``clip_low`` / ``clip_high``)."""
    gspo_clip_low: float = 3e-4
    gspo_clip_high: float = 4e-4
    """GSPO's clip range on the length-normalised sequence ratio (the paper's 3e-4 / 4e-4)."""
    rollout_correction: str = "none"
    """Trainer-vs-sampler correction (:func:`trainer.learn.loss.rollout_correction`): ``none``, ``tis_token``,
    ``tis_sequence`` (truncated IS weight), ``mis_token``, ``mis_sequence`` (masked IS). On: the trainer's
    ``π_old`` is recomputed before the update's first gradient step and the PPO ratio is taken to it."""
    rollout_correction_cap: float = 2.0
    """``C``: TIS weights are ``min(ρ, C)``; MIS keeps ``ρ`` in ``[1/C, C]`` (verl's default 2). Must be > 1."""
    echo_coef: float = 0.0
    """ECHO: weight of the cross-entropy on environment-observation tokens (0: off, no extra kernel call)."""

    def __post_init__(self) -> None:
        require(self.policy_loss in POLICY_LOSSES, f"loss.policy_loss must be one of {', '.join(POLICY_LOSSES)}, got {self.policy_loss!r}")
        require(self.rollout_correction in ROLLOUT_CORRECTIONS,
                f"loss.rollout_correction must be one of {', '.join(ROLLOUT_CORRECTIONS)}, got {self.rollout_correction!r}")
        require(self.rollout_correction_cap > 1, f"loss.rollout_correction_cap must be > 1, got {self.rollout_correction_cap}")
        require(0 <= self.gspo_clip_low < 1 and self.gspo_clip_high >= 0,
                f"loss.gspo_clip_low must be in [0, 1) and gspo_clip_high >= 0, got {self.gspo_clip_low}, {self.gspo_clip_high}")
        require(self.echo_coef >= 0, f"loss.echo_coef must be >= 0 (0: off), got {self.echo_coef}")

        require(self.aggregation in AGGREGATIONS, f"loss.aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")
        require(self.kl_estimator in KL_ESTIMATORS, f"loss.kl_estimator must be one of {', '.join(KL_ESTIMATORS)}")
        require(0 <= self.clip_low < 1 and self.clip_high >= 0, "loss.clip_low must be in [0, 1) and clip_high >= 0")
        require(self.clip_ratio_c > 1, f"loss.clip_ratio_c must be > 1 (the dual-clip bound on the ratio), got {self.clip_ratio_c}")


@dataclass(frozen=True)
class BatchCounts:
    """What the aggregations divide by, counted over a whole batch (all its micro-batches, all ranks)."""

    tokens: float
    """Sampled tokens (``loss_mask`` 1)."""
    rows: float
    """Rows: token segments, the "sequences" of ``sequence_mean`` and the B of ``token_sum_norm``."""
    value_targets: float = 0.0
    """Positions with a critic target (PPO's value loss is their mean)."""
    observations: float = 0.0
    """Observation tokens (:func:`observation_mask`): ECHO's cross-entropy is their mean."""


def global_sum(values: torch.Tensor) -> torch.Tensor:
    """``values`` summed over the ranks of the default ``torch.distributed`` group; itself when there is none.

    Every rank must call it the same number of times (it is a collective), with a tensor on the backend's
    device (CPU for gloo, CUDA for nccl)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        values = values.clone()
        torch.distributed.all_reduce(values, op=torch.distributed.ReduceOp.SUM)
    return values


def batch_counts(loss_masks: Sequence[torch.Tensor], value_targets: Sequence[torch.Tensor | None] = (), *,
                 observation_masks: Sequence[torch.Tensor | None] = (),
                 reduce: Callable[[torch.Tensor], torch.Tensor] = global_sum) -> BatchCounts:
    """The normalisers of a whole batch given as its micro-batches: sampled tokens and rows of each
    ``loss_masks[i]`` (B_i, T_i), critic targets of each ``value_targets[i]`` (B_i, T_i, NaN where none),
    observation tokens of each ``observation_masks[i]`` (ECHO), summed over the micro-batches and then by
    ``reduce`` (:func:`global_sum`: across ranks, one collective)."""
    local = torch.zeros(4, dtype=torch.float64, device=loss_masks[0].device)
    for mask in loss_masks:
        local[0] += mask.sum()
        local[1] += mask.shape[0]
    for targets in value_targets:
        if targets is not None:
            local[2] += (~torch.isnan(targets)).sum()
    for observed in observation_masks:
        if observed is not None:
            local[3] += observed.sum()
    tokens, rows, target_count, observations = reduce(local).tolist()
    return BatchCounts(tokens, rows, target_count, observations)


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
    policy_loss: str = "ppo"
    """The per-token policy term: an entry of :data:`POLICY_LOSSES`."""
    gspo_clip_low: float = 3e-4
    gspo_clip_high: float = 4e-4
    """GSPO's clip range on the sequence ratio (the paper's 3e-4 / 4e-4: a length-normalised ratio moves little)."""
    echo_coef: float = 0.0
    """ECHO's weight λ on the observation-token cross-entropy (0: off)."""


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


TokenLoss = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def ppo_token_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                   settings: LossSettings) -> TokenLoss:
    """PPO / DAPO's dual-clipped token loss (:func:`clipped_token_loss` on the token log-ratio)."""
    return clipped_token_loss(logp - old_logp, advantages, settings)


def sequence_log_ratio(log_ratio: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, 1): each row's mean log-ratio over its sampled tokens, ``log s_i`` of GSPO (0 for a row without any).
    A row is never split across micro-batches, so this is the same in any split."""
    return (log_ratio * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1)


def gspo_token_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                    settings: LossSettings) -> TokenLoss:
    """GSPO (Zheng et al. 2025, "Group Sequence Policy Optimization", arXiv:2507.18071), in its GSPO-token form.

    The sequence ratio ``s_i = exp(mean_t log(π_θ(y_it) / π_old(y_it)))`` (length-normalised over the row's
    sampled tokens) replaces the token ratio; GSPO-token writes it per token as
    ``s_it = sg(s_i) · π_θ(y_it) / sg(π_θ(y_it))``: equal to ``s_i`` in value, with the gradient
    ``s_i ∇log π_θ(y_it)``, so per-token (per-turn) advantages work and, with one advantage per row and
    ``sequence_mean``, the gradient is GSPO's. The clip (and dual-clip) of :func:`clipped_token_loss` is
    applied to ``s_it`` with GSPO's own range ``gspo_clip_low`` / ``gspo_clip_high`` (the paper: 3e-4 / 4e-4).
    """
    sequence = sequence_log_ratio((logp - old_logp).detach(), mask)  # (B, 1)
    gspo = replace(settings, clip_low=settings.gspo_clip_low, clip_high=settings.gspo_clip_high)
    return clipped_token_loss(sequence + (logp - logp.detach()), advantages, gspo)


def cispo_token_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                     settings: LossSettings) -> TokenLoss:
    """CISPO (MiniMax 2025, "MiniMax-M1: Scaling Test-Time Compute Efficiently with Lightning Attention",
    arXiv:2506.13585): REINFORCE with the clipped importance weight held constant,

        per_token = -sg(clip(r, 1 - ε_low, 1 + ε_high)) · A · log π_θ,   r = π_θ / π_old,

    so every token keeps a gradient (PPO's clip zeroes it outside the range), bounded by the weight. The
    paper sets no lower bound in effect (``loss.clip_low`` near 1 does that here). For A < 0 the weight is
    also capped at ``clip_ratio_c`` (dual-clip; moot while ``1 + ε_high < c``). ``clipped``: tokens with
    A ≠ 0 whose weight was clipped; ``dual``: those whose weight the dual cap lowered.
    """
    ratio = (logp - old_logp).detach().clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP).exp()
    weight = ratio.clamp(1 - settings.clip_low, 1 + settings.clip_high)
    negative = advantages < 0
    dual = negative & (weight > settings.clip_ratio_c)
    weight = torch.where(dual, torch.full_like(weight, settings.clip_ratio_c), weight)
    return -weight * advantages * logp, (weight != ratio) & (advantages != 0) & ~dual, dual


POLICY_LOSSES: dict[str, Callable[..., TokenLoss]] = {
    "ppo": ppo_token_loss, "gspo": gspo_token_loss, "cispo": cispo_token_loss,
}
"""``loss.policy_loss``: (logp, old_logp, advantages, mask, settings) -> (per-token loss, clipped, dual)."""


ROLLOUT_CORRECTIONS = ("none", "tis_token", "tis_sequence", "mis_token", "mis_sequence")
"""``loss.rollout_correction``: truncated (TIS) or masked (MIS) importance sampling, per token or per row."""


def rollout_correction(old_logp: torch.Tensor, sampling_logp: torch.Tensor, mask: torch.Tensor, mode: str,
                       cap: float) -> tuple[torch.Tensor | None, torch.Tensor]:
    """The rollout correction between the trainer's ``π_old`` and the sampler's log-probs: (IS weight or
    None, the loss mask to train on). Both inputs are constants (no gradient).

    ``ρ = π_old / π_sampler`` per token (``*_token``) or its product over a row's sampled tokens
    (``*_sequence``; the row is never split across micro-batches). TIS (Yao et al. 2025, "Your Efficient RL
    Framework Secretly Brings You Off-Policy RL Training", blog post fengyao.notion.site/off-policy-rl;
    verl's rollout correction): the policy term of each token is multiplied by ``min(ρ, C)``. MIS (masked
    IS, verl's rollout correction in its mask / rejection form, after Liu, Li, Fu, Wang, Liu and Shen 2025,
    "When Speed Kills Stability: Demystifying RL Collapse from the Training-Inference Mismatch", blog post
    richardli.xyz/rl-collapse): tokens (rows) with ``ρ`` outside
    ``[1/C, C]`` leave the loss mask, so they neither contribute nor count in any normaliser (rejected
    tokens kept in the denominator would shrink the gradient). ``none``: no weight, the mask as given.
    The sequence level multiplies the row's token ratios (verl's ``sequence``), not their geometric mean.
    """
    if mode == "none":
        return None, mask
    log_rho = (old_logp - sampling_logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP) * mask
    if mode.endswith("_sequence"):
        log_rho = log_rho.sum(-1, keepdim=True).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP).expand_as(mask)
    rho = log_rho.exp()
    if mode.startswith("tis_"):
        return rho.clamp(max=cap), mask
    return None, mask * ((rho >= 1.0 / cap) & (rho <= cap)).to(mask.dtype)


def observation_mask(loss_mask: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, T) bool: ECHO's environment-observation tokens, the ids after a row's first sampled id with
    ``loss_mask`` 0 (not the prompt before it, not padding). They include the template's markers between a
    reply and the next (end-of-turn, the user header, the generation prompt): inserted by the template, not
    told apart from the env's text without re-tokenising, and cheap to predict."""
    started = loss_mask.cumsum(-1) > 0
    return started & (loss_mask == 0) & attention_mask.bool()


def echo_loss(observation_logp: torch.Tensor, observed: torch.Tensor, counts: BatchCounts) -> torch.Tensor:
    """ECHO ("Environment Cross-entropy Hybrid Objective"; the seed abstract, no arXiv id found): the mean
    cross-entropy ``-log π_θ(o_t | o_<t)`` of the batch's observation tokens (``observed``), a share of the
    whole batch's mean when ``counts`` are the batch's (:func:`batch_counts` with ``observation_masks``)."""
    return -(observation_logp * observed).sum() / max(counts.observations, 1.0)


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, loss_mask: torch.Tensor,
                settings: LossSettings, *, entropy: torch.Tensor | None = None,
                ref_logp: torch.Tensor | None = None, counts: BatchCounts | None = None,
                is_weights: torch.Tensor | None = None, observation_logp: torch.Tensor | None = None,
                observed: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """The scalar loss to minimise and its diagnostics (clip fractions, KL, entropy, approx-KL to old).

    Args (all (B, T)): current log-probs (with grad), the log-probs the data was sampled with, per-token
    advantages, the loss mask; optionally entropies (with grad) and a reference policy's log-probs.
    ``counts``: the normalisers of the whole batch this is a micro-batch of (:func:`batch_counts`); then
    the loss and every metric are this micro-batch's share, and summing them over the micro-batches gives
    the whole batch's. ``None``: this is the whole batch. ``is_weights``: the rollout correction's TIS weight
    multiplying the policy term (:func:`rollout_correction`); ``observation_logp`` / ``observed``: the
    log-probs (with grad) and mask of the observation tokens for ECHO (``echo_loss`` is logged, and added
    × ``echo_coef``).

    ``clip_fraction`` is the fraction of masked tokens (``loss_mask`` 1) where PPO's clipped term
    ``-A · clip(ratio, 1 - ε_low, 1 + ε_high)`` is strictly greater than ``-A · ratio`` and so is the term
    used (a ratio outside the range on the side where A pushes it further; A = 0 never counts);
    ``clip_fraction_dual`` the fraction where the dual-clip bound ``-A · c`` is the term used (for ``gspo``
    the same on the sequence ratio; for ``cispo`` where the IS weight was clipped / dual-capped).
    """
    mask = loss_mask.float()
    if counts is None:
        counts = batch_counts([mask], observation_masks=[observed] if observed is not None else (), reduce=lambda t: t)

    def aggregate(values: torch.Tensor) -> torch.Tensor:
        return AGGREGATIONS[settings.aggregation](values, mask, settings.max_tokens, counts)

    per_token, clipped, dual = POLICY_LOSSES[settings.policy_loss](logp, old_logp, advantages, mask, settings)
    if is_weights is not None:
        per_token = per_token * is_weights
    loss = aggregate(per_token)
    metrics = {"pg_loss": float(loss.detach()),
               "clip_fraction": float(token_mean(clipped.float(), mask, 0, counts)),
               "clip_fraction_dual": float(token_mean(dual.float(), mask, 0, counts)),
               "approx_kl_old": float(token_mean(kl_k3(logp.detach(), old_logp), mask, 0, counts))}
    loss = _add_regularisers(loss, logp, mask, settings, aggregate, counts, metrics, entropy=entropy,
                             ref_logp=ref_logp, observation_logp=observation_logp, observed=observed)
    return loss, metrics


def _add_regularisers(loss: torch.Tensor, logp: torch.Tensor, mask: torch.Tensor, settings: LossSettings,
                      aggregate: Callable, counts: BatchCounts, metrics: dict[str, float], *,
                      entropy: torch.Tensor | None, ref_logp: torch.Tensor | None,
                      observation_logp: torch.Tensor | None, observed: torch.Tensor | None) -> torch.Tensor:
    """``loss + β · KL - c_H · entropy + λ · ECHO``, added in that order (so the defaults' numbers are the
    same bits as before ECHO existed), logging each term's value in ``metrics``."""
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
    if observation_logp is not None and observed is not None:
        echo = echo_loss(observation_logp, observed.float(), counts)
        metrics["echo_loss"] = float(echo.detach())
        if settings.echo_coef:
            loss = loss + settings.echo_coef * echo
    return loss
