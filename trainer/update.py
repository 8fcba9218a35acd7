"""One RL update from the kept trajectories and their per-turn advantages.

``optim.minibatches`` gradient steps over the batch. Each token segment of an episode (one unless its
history was folded) is a row of its own.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from .algorithms import token_advantages
from .logprobs import PackedBatch, pack, token_logprobs
from .loss import LossSettings, policy_loss
from .trajectory import Trajectory
from .value import dense_value_targets

_log = logging.getLogger(__name__)


def rl_update(trainer: Any, trajectories: list[Trajectory], advantages: list[list[float]]) -> dict[str, float]:
    """One pass of ``optim.minibatches`` gradient steps over the batch (``advantages``: per turn).

    ``trainer`` is a :class:`trainer.loop.Trainer` (its model, value head, reference model, optimiser,
    scheduler and config).
    """
    if not trajectories:  # every group had zero variance: nothing to learn (the schedule counts updates)
        return {"updated": 0.0}
    config = trainer.config
    trainer.model.train()
    n = min(config.optim.minibatches, len(trajectories))
    if n < config.optim.minibatches:  # an empty minibatch has nothing to pack: fewer, non-empty ones
        _log.info("optim.minibatches=%d > %d kept trajectories: using %d minibatches this step",
                  config.optim.minibatches, len(trajectories), n)
    chunks = [list(range(len(trajectories)))[i::n] for i in range(n)]
    metrics: dict[str, float] = {}
    # critic targets: GAE returns = advantage + old value, per turn
    returns = None if trainer.value_head is None else [
        [a + v for a, v in zip(adv, t.turn_values)] for t, adv in zip(trajectories, advantages)]
    for k, chunk in enumerate(chunks):
        rows = [(s, i) for i in chunk for s in trajectories[i].segments]
        batch = pack([s for s, _ in rows], trainer.policy.pad_id, [token_advantages(s, advantages[i]) for s, i in rows],
                     value_targets=None if returns is None else [dense_value_targets(s, returns[i]) for s, i in rows])
        step_metrics = gradient_step(trainer, batch)
        if k == 0:
            metrics.update(step_metrics)
    trainer.weights_changed()
    trainer.scheduler.step()
    return {**metrics, "updated": 1.0, "lr": trainer.scheduler.get_last_lr()[0]}


def gradient_step(trainer: Any, batch: PackedBatch) -> dict[str, float]:
    """One optimiser step on one minibatch."""
    c = trainer.config
    logp, entropy, hidden = token_logprobs(trainer.model, batch, temperature=c.rollout.temperature or 1.0,
                                           backend=c.loss.kernel_backend, return_hidden=True)
    ref_logp = None
    if trainer.ref_model is not None:
        with torch.no_grad():
            ref_logp, _ = token_logprobs(trainer.ref_model, batch, temperature=c.rollout.temperature or 1.0)
    settings = LossSettings(c.loss.clip_low, c.loss.clip_high, c.loss.aggregation, c.loss.kl_coef,
                            c.loss.kl_estimator, c.loss.entropy_coef, c.rollout.max_new_tokens * c.env.max_turns,
                            clip_ratio_c=c.loss.clip_ratio_c)
    loss, metrics = policy_loss(logp, batch.sampling_logprobs, batch.advantages, batch.loss_mask, settings,
                                entropy=entropy, ref_logp=ref_logp)
    if trainer.value_head is not None:
        has_target = ~torch.isnan(batch.value_targets)  # (B, T)
        value_loss = ((trainer.value_head(hidden[has_target]) - batch.value_targets[has_target]) ** 2).mean()
        loss = loss + c.algorithm.value_coef * value_loss
        metrics["value_loss"] = float(value_loss.detach())
    trainer.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for p in trainer.model.parameters() if p.requires_grad] + trainer._critic_parameters()
    grad_norm = torch.nn.utils.clip_grad_norm_(params, c.optim.grad_clip)
    trainer.optimizer.step()
    gap = ((logp.detach() - batch.sampling_logprobs).abs() * batch.loss_mask)
    return {**metrics, "loss": float(loss.detach()), "grad_norm": float(grad_norm),
            "logprob_gap_mean": float(gap.sum() / batch.loss_mask.sum()), "logprob_gap_max": float(gap.max()),
            "train_tokens": float(batch.num_tokens)}
