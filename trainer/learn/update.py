"""One RL update from the kept trajectories and their per-turn advantages.

An update makes ``optim.epochs × optim.minibatches`` optimiser steps. Each token segment of an episode
(one unless its history was folded; one per turn in turn mode) is a row of its own; a trajectory's rows stay
in one minibatch. Epoch 0 splits the trajectories round-robin (``i::n``, as before epochs existed); each
later epoch reshuffles them with a seed derived from ``config.seed``, the step and the epoch, so a run is
deterministic and a resumed one makes the same split.

Micro-batching (``optim.micro_batch_tokens`` > 0): a minibatch's rows are sorted by length and packed
greedily into forwards of at most that many padded tokens (rows × longest row; a longer row goes alone).
The loss normalisers are counted once over the whole minibatch (:func:`trainer.learn.loss.batch_counts`, through
:func:`trainer.learn.loss.global_sum` across ranks), each micro-batch's loss is its share of the minibatch's loss,
and the gradients accumulate: the optimiser sees the gradient of the whole minibatch in one forward (tested
within 1e-5 for every aggregation, KL, entropy and the critic). Under data parallelism each rank's loss is
then its share of the global loss, so gradients must be SUMMED across ranks, not averaged. Metrics are the
whole minibatch's (shares summed, ``logprob_gap_max`` a max); those of the first optimiser step (on-policy:
the log-prob gap then measures sampler vs trainer only) are logged, plus ``*_last`` of the last step.

``π_old``, the denominator of the ratio: by default the **sampler's** log-probs (``sampling_logprobs``); no
trainer-side old log-probs are recomputed. The first gradient step runs at the weights that sampled, so its
ratio is trainer/sampler (1 up to the kernels' ~1e-6 gap with the HF backend; the real mismatch with vLLM);
later minibatches and epochs see the sampler's numbers too. With ``loss.rollout_correction`` on,
:func:`old_logprobs` recomputes the trainer's ``π_old`` of every row before the first gradient step: the
ratio is then ``π_θ / π_old`` (exactly 1 at the first step) and the trainer-vs-sampler mismatch
``ρ = π_old / π_sampler`` is corrected by TIS weights or MIS masks (:func:`trainer.learn.loss.rollout_correction`).
Asynchronous collection with S > 0 is the same computation under its own keys (decoupled PPO: ``π_old`` is
the proximal policy, ``ρ`` the behaviour weight; :func:`trainer.collect.staleness.correction_of`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..collect.staleness import correction_of
from ..collect.trajectory import Trajectory
from ..errors import require
from ..seeding import derive_seed
from .algorithms import token_advantages
from .logprobs import PackedBatch, pack, token_logprobs
from .loss import (BatchCounts, LossSettings, batch_counts, global_sum, observation_mask, policy_loss,
                   rollout_correction)
from .value import dense_value_targets, turn_starts

_log = logging.getLogger(__name__)

_EPOCH_ORDER = 6
"""Derived-seed purpose of the epoch reshuffles (distinct from trainer.run.loop's stream ids 1-5)."""
_MAX_METRICS = ("logprob_gap_max",)
"""Metrics combined over micro-batches by max; every other one is a share and is summed."""
_warned: list[int] = []
"""Non-empty once the ECHO-with-turn-samples warning was logged (once per process)."""


@dataclass
class OptimConfig:
    """The RL optimiser (AdamW or plain SGD), linear warm-up then constant."""

    name: str = "adamw"
    """``adamw`` or ``sgd``. Adam's first steps move every weight by about ``lr`` whatever the gradient's
    size, so a weak, noisy RL gradient (a few successes in a batch of a small model) becomes a full-size
    random step; SGD moves weights in proportion to the signal (use a much larger ``lr``)."""
    lr: float = 1e-4
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    warmup_steps: int = 0
    minibatches: int = 1
    """Gradient steps per collection (the batch is split; >1 makes later steps off-policy, hence the clip)."""
    epochs: int = 1
    """PPO-style passes over the minibatches per collection (``epochs × minibatches`` gradient steps); the
    minibatch split is reshuffled each epoch after the first from a seed derived from ``seed`` and the step."""
    micro_batch_tokens: int | str = "auto"
    """Gradient accumulation by a token budget: each forward holds at most this many padded tokens (rows ×
    longest row), at least one row; 0 runs each minibatch in one forward. The gradient equals the whole
    minibatch's in one forward (:mod:`trainer.learn.update`). ``auto``: sized to the device's memory and the model
    (:func:`trainer.run.defaults.auto_micro_batch_tokens`; one forward when the largest possible minibatch fits; a
    135 M model on 24 GiB gets about 1,900, where one forward of a turn-mode batch was OOM-killed)."""
    shared_prefix: bool = True
    """Run the prefix a micro-batch's rows share (a group's first prompt) through the decoder once
    (:mod:`trainer.learn.shared_prefix`; same log-probs up to float rounding); micro-batches then hold one
    group's rows and count the prefix once against ``micro_batch_tokens``. Only in one process without
    gradient checkpointing; ``false``: every row's full forward, packed across groups."""

    def __post_init__(self) -> None:
        require(self.name in ("adamw", "sgd"), f"optim.name must be 'adamw' or 'sgd', got {self.name!r}")
        require(self.lr > 0, f"optim.lr must be > 0, got {self.lr}")
        require(self.minibatches >= 1, f"optim.minibatches must be >= 1, got {self.minibatches}")
        require(self.epochs >= 1, f"optim.epochs must be >= 1, got {self.epochs}")
        require(self.micro_batch_tokens == "auto" or (type(self.micro_batch_tokens) is int and self.micro_batch_tokens >= 0),
                f"optim.micro_batch_tokens must be 'auto' or an int >= 0 (0: one forward per minibatch), "
                f"got {self.micro_batch_tokens!r}")


def minibatch_split(num: int, minibatches: int, *, epoch: int, seed: int, step: int) -> list[list[int]]:
    """Trajectory indices of each minibatch: round-robin in epoch 0, a seeded permutation's after.

    >>> minibatch_split(5, 2, epoch=0, seed=0, step=0)
    [[0, 2, 4], [1, 3]]
    """
    order = (np.arange(num) if epoch == 0
             else np.random.default_rng(derive_seed(seed, _EPOCH_ORDER, step, epoch)).permutation(num))
    return [order[i::minibatches].tolist() for i in range(minibatches)]


def micro_batches(lengths: Sequence[int], budget: int, prefixes: Sequence[tuple[Any, int]] | None = None
                  ) -> list[list[int]]:
    """Row indices of each forward: rows sorted by length (longest first) packed greedily so that
    ``rows × longest`` stays ≤ ``budget``; a row longer than the budget goes alone. ``budget`` 0: one forward.

    With ``prefixes`` (per row, a key and how many leading ids rows of that key share, e.g. a group's first
    prompt) a forward holds one key's rows, the keys in order of first appearance, and costs
    ``shared + rows × (longest - shared)``: the shared ids run once (:mod:`trainer.learn.shared_prefix`).

    >>> micro_batches([3, 5, 2, 4], 8)
    [[1], [3, 0], [2]]
    >>> micro_batches([6, 5, 6, 5], 12, prefixes=[("a", 4), ("b", 4), ("a", 4), ("b", 4)])
    [[0, 2], [1, 3]]
    """
    if budget <= 0 and prefixes is None:
        return [list(range(len(lengths)))]
    prefixes = prefixes or [(None, 0)] * len(lengths)
    first = {key: n for n, key in enumerate(dict.fromkeys(key for key, _ in prefixes))}
    order = sorted(range(len(lengths)), key=lambda i: (first[prefixes[i][0]], -lengths[i]))  # stable
    groups: list[list[int]] = []
    for i in order:
        if groups and prefixes[groups[-1][0]][0] == prefixes[i][0]:
            head = groups[-1][0]
            shared = min(prefixes[head][1], lengths[i])
            if budget <= 0 or shared + (len(groups[-1]) + 1) * (lengths[head] - shared) <= budget:
                groups[-1].append(i)
                continue
        groups.append([i])
    return groups


def shares_prefixes(trainer: Any) -> bool:
    """Whether this trainer's forwards may run a shared prefix once (``optim.shared_prefix``, one process,
    no gradient checkpointing: :mod:`trainer.learn.shared_prefix`)."""
    c = trainer.config
    return bool(c.optim.shared_prefix) and not trainer.world.active and not c.policy.gradient_checkpointing


def row_prefixes(segments: Sequence[Trajectory]) -> list[tuple[Any, int]]:
    """Each row's prefix key (its first prompt's ids) and that prompt's length, for :func:`micro_batches`."""
    return [(tuple(s.token_ids[:s.prompt_length]), s.prompt_length) for s in segments]


def rl_update(trainer: Any, trajectories: list[Trajectory], advantages: list[list[float]]) -> dict[str, float]:
    """``optim.epochs`` passes of ``optim.minibatches`` optimiser steps over the batch (``advantages``: per turn).

    ``trainer`` is a :class:`trainer.run.loop.Trainer`: its config, model, value head, reference model,
    optimiser, scheduler, ``device`` and ``step`` are used; the scheduler steps once per update.
    """
    world = trainer.world  # under torchrun every rank makes the same optimiser steps, data or not
    if world.agree_max(len(trajectories)) == 0:  # every group had zero variance: nothing to learn (the schedule counts updates)
        return {"updated": 0.0}
    config = trainer.config
    trainer.model.train()
    n = min(config.optim.minibatches, world.agree_max(len(trajectories)))
    if n < config.optim.minibatches:  # an empty minibatch has nothing to pack: fewer, non-empty ones
        _log.info("optim.minibatches=%d > %d kept trajectories: using %d minibatches this step",
                  config.optim.minibatches, len(trajectories), n)
    # critic targets: GAE returns = advantage + old value, per turn
    returns = None if trainer.value_head is None else [
        [a + v for a, v in zip(adv, t.turn_values)] for t, adv in zip(trajectories, advantages)]
    if config.loss.echo_coef and getattr(trainer, "sample_unit", "episode") == "turn" and not _warned:
        _warned.append(1)  # a turn sample is prompt + reply: its observations sit in the next prompt, never after a reply
        _log.warning("loss.echo_coef > 0 with turn samples: a turn's row has no observation tokens after its "
                     "reply, so ECHO trains nothing; use rollout.sample_unit=episode for ECHO")
    # π_old: the sampler's log-probs, or recomputed (the proximal policy) under a correction / async S > 0
    old, correction = (None, {}) if correction_of(config)[0] == "none" else old_logprobs(trainer, trajectories)
    steps: list[dict[str, float]] = []
    for epoch in range(config.optim.epochs):
        for chunk in minibatch_split(len(trajectories), n, epoch=epoch, seed=config.seed, step=trainer.step):
            steps.append(gradient_step(trainer, pack_minibatch(trainer, trajectories, advantages, returns, chunk, old=old)))
    trainer.weights_changed()
    trainer.scheduler.step()
    last = {f"{key}_last": steps[-1][key] for key in ("clip_fraction", "approx_kl_old")} if len(steps) > 1 else {}
    return {**steps[0], **last, **correction, "gradient_steps": float(len(steps)), "updated": 1.0,
            "lr": trainer.scheduler.get_last_lr()[0]}


OldLogprobs = dict[tuple[int, int], list[float]]
"""The trainer's ``π_old`` of each row, keyed by (trajectory index, segment index)."""


def pack_minibatch(trainer: Any, trajectories: list[Trajectory], advantages: list[list[float]],
                   returns: list[list[float]] | None, chunk: list[int], *,
                   old: OldLogprobs | None = None) -> list[PackedBatch]:
    """The minibatch of trajectories ``chunk`` as packed micro-batches on the trainer's device; with ``old``
    (the rollout correction on) each carries the trainer's ``π_old``, its TIS weights or MIS-reduced mask."""
    rows = [(s, i, j) for i in chunk for j, s in enumerate(trajectories[i].segments)]
    if not rows:  # a rank with fewer trajectories than minibatches (its forwards are padding)
        return []
    share = shares_prefixes(trainer)
    out = []
    for group in micro_batches([len(s.token_ids) for s, _, _ in rows], trainer.config.optim.micro_batch_tokens,
                               row_prefixes([s for s, _, _ in rows]) if share else None):
        part = [rows[r] for r in group]
        batch = pack([s for s, _, _ in part], trainer.policy.pad_id,
                     [token_advantages(s, advantages[i]) for s, i, _ in part], device=trainer.device,
                     value_targets=None if returns is None else [dense_value_targets(s, returns[i]) for s, i, _ in part],
                     share_prefix=share)
        out.append(_with_loss_extras(trainer.config, batch, None if old is None else [old[i, j] for _, i, j in part]))
    return out


def _with_loss_extras(config: Any, batch: PackedBatch, old_rows: list[list[float]] | None) -> PackedBatch:
    """``batch`` with ECHO's observation mask (``echo_coef`` > 0; from the mask as sampled, before MIS) and
    the rollout correction's ``π_old``, TIS weights and MIS mask (``old_rows`` given)."""
    if config.loss.echo_coef:
        batch.observed = observation_mask(batch.loss_mask, batch.attention_mask)
    if old_rows is not None:
        T = batch.loss_mask.shape[1]
        batch.old_logprobs = torch.tensor([row + [0.0] * (T - len(row)) for row in old_rows],
                                          dtype=torch.float32, device=batch.loss_mask.device)
        batch.is_weights, batch.loss_mask = rollout_correction(
            batch.old_logprobs, batch.sampling_logprobs, batch.loss_mask, *correction_of(config))
    return batch


@torch.no_grad()
def old_logprobs(trainer: Any, trajectories: list[Trajectory]) -> tuple[OldLogprobs, dict[str, float]]:
    """The trainer's log-probs of every row before the update's first gradient step (``π_old`` of the
    rollout correction), in forwards of at most ``optim.micro_batch_tokens`` padded tokens (0: one), and
    the correction's metrics over the whole batch (all ranks; each rank returns its share, summed by
    ``World.update_metrics``): mean ``|π_old - π_sampler|`` gap, mean TIS weight, kept fraction (MIS)."""
    c = trainer.config
    rows = [(k, j, s) for k, t in enumerate(trajectories) for j, s in enumerate(t.segments)]
    share = shares_prefixes(trainer)
    groups = micro_batches([len(s.token_ids) for _, _, s in rows], c.optim.micro_batch_tokens,
                           row_prefixes([s for _, _, s in rows]) if share else None) if rows else []
    old: OldLogprobs = {}
    sums = torch.zeros(4, dtype=torch.float64)  # tokens, |gap|, weight, kept
    for group in groups:
        batch = pack([rows[r][2] for r in group], trainer.policy.pad_id, device=trainer.device, share_prefix=share)
        logp, _ = token_logprobs(trainer.model, batch, temperature=c.rollout.temperature or 1.0, backend=c.loss.kernel_backend)
        for b, r in enumerate(group):
            k, j, segment = rows[r]
            old[k, j] = logp[b, :len(segment.token_ids)].tolist()
        mask = batch.loss_mask.float()
        weights, kept = rollout_correction(logp, batch.sampling_logprobs, mask, *correction_of(c))
        sums += torch.tensor([float(mask.sum()), float(((logp - batch.sampling_logprobs).abs() * mask).sum()),
                              float(((weights if weights is not None else 1.0) * mask).sum()), float(kept.sum())],
                             dtype=torch.float64)
    for batch in trainer.world.padding(len(groups), trainer.policy.pad_id, trainer.device):  # FSDP2: same forwards
        token_logprobs(trainer.model, batch, backend=c.loss.kernel_backend)
    tokens = max(float(global_sum(torch.tensor([float(sums[0])], dtype=torch.float64, device=trainer.device))), 1.0)
    return old, {"rollout_gap_old_mean": float(sums[1]) / tokens, "rollout_is_weight_mean": float(sums[2]) / tokens,
                 "rollout_kept_fraction": float(sums[3]) / tokens}


@torch.no_grad()
def read_turn_values(trainer: Any, trajectories: list[Trajectory]) -> None:
    """Set each trajectory's ``turn_values`` from the value head (before the update: the "old" values), in
    forwards of at most ``optim.micro_batch_tokens`` padded tokens like the update (0: one forward)."""
    rows = [(k, s) for k, t in enumerate(trajectories) for s in t.segments]
    by_turn: list[dict[int, float]] = [{} for _ in trajectories]
    for group in micro_batches([len(s.token_ids) for _, s in rows], trainer.config.optim.micro_batch_tokens):
        batch = pack([rows[r][1] for r in group], trainer.policy.pad_id, device=trainer.device)
        hidden = trainer.model.get_decoder()(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                                             use_cache=False).last_hidden_state
        values = trainer.value_head(hidden).tolist()  # (B, T)
        for b, r in enumerate(group):
            k, segment = rows[r]
            by_turn[k].update({turn: values[b][i] for turn, i in turn_starts(segment).items()})
    for t, values_of in zip(trajectories, by_turn):
        t.turn_values = [values_of[turn] for turn in range(t.num_turns)]


def loss_settings(config: Any) -> LossSettings:
    """The loss's knobs from a :class:`~trainer.config.TrainConfig`."""
    c = config
    return LossSettings(c.loss.clip_low, c.loss.clip_high, c.loss.aggregation, c.loss.kl_coef, c.loss.kl_estimator,
                        c.loss.entropy_coef, c.rollout.max_new_tokens * c.env.max_turns, clip_ratio_c=c.loss.clip_ratio_c,
                        policy_loss=c.loss.policy_loss, gspo_clip_low=c.loss.gspo_clip_low,
                        gspo_clip_high=c.loss.gspo_clip_high, echo_coef=c.loss.echo_coef)


def accumulate_gradients(trainer: Any, micro: Sequence[PackedBatch]) -> dict[str, float]:
    """``backward`` of each micro-batch's share of the minibatch's loss (gradients add up in ``.grad``);
    returns the minibatch's metrics. Does not zero, clip or step."""
    counts = batch_counts([b.loss_mask for b in micro] or [torch.zeros(0, 1, device=trainer.device)],
                          [b.value_targets for b in micro], observation_masks=[b.observed for b in micro])
    # zero-weight forwards that bring this rank up to the most any rank makes; agreed (a collective) before any
    # backward, since DDP all-reduces in each backward and FSDP2 all-gathers in each forward
    padding = trainer.world.padding(len(micro), trainer.policy.pad_id, trainer.device)
    total: dict[str, float] = {}
    for batch in micro:
        loss, metrics = micro_batch_loss(trainer, batch, counts)
        loss.backward()
        for key, value in metrics.items():
            total[key] = (max(total.get(key, value), value) if key in _MAX_METRICS else total.get(key, 0.0) + value)
    for batch in padding:
        (micro_batch_loss(trainer, batch, counts)[0] * 0.0).backward()
    return {**total, "micro_batches": float(len(micro))}


def micro_batch_loss(trainer: Any, batch: PackedBatch, counts: BatchCounts) -> tuple[torch.Tensor, dict[str, float]]:
    """One forward: this micro-batch's share of the minibatch loss (``counts``: the minibatch's), and metrics."""
    c = trainer.config
    temperature = c.rollout.temperature or 1.0
    logp, entropy, hidden, *observation_logp = token_logprobs(trainer.model, batch, temperature=temperature,
                                                              backend=c.loss.kernel_backend, return_hidden=True,
                                                              observed=batch.observed)
    ref_logp = None
    if trainer.ref_model is not None:
        with torch.no_grad():
            ref_logp, _ = token_logprobs(trainer.ref_model, batch, temperature=temperature, backend=c.loss.kernel_backend)
    old = batch.sampling_logprobs if batch.old_logprobs is None else batch.old_logprobs  # π_old: see rl_update
    loss, metrics = policy_loss(logp, old, batch.advantages, batch.loss_mask, loss_settings(c), entropy=entropy,
                                ref_logp=ref_logp, counts=counts, is_weights=batch.is_weights,
                                observation_logp=observation_logp[0] if observation_logp else None,
                                observed=batch.observed)
    if trainer.value_head is not None:
        has_target = ~torch.isnan(batch.value_targets)  # (B, T)
        squared = (trainer.value_head(hidden[has_target]) - batch.value_targets[has_target]) ** 2
        value_loss = squared.sum() / max(counts.value_targets, 1.0)  # a share of the minibatch's mean
        loss = loss + c.algorithm.value_coef * value_loss
        metrics["value_loss"] = float(value_loss.detach())
    gap = (logp.detach() - batch.sampling_logprobs).abs() * batch.loss_mask
    metrics.update(loss=float(loss.detach()), logprob_gap_mean=float(gap.sum()) / max(counts.tokens, 1.0),
                   logprob_gap_max=float(gap.max()), train_tokens=float(batch.num_tokens))
    return loss, metrics


def gradient_step(trainer: Any, micro: Sequence[PackedBatch]) -> dict[str, float]:
    """One optimiser step on one minibatch given as its micro-batches: zero, accumulate, clip, step."""
    trainer.optimizer.zero_grad(set_to_none=True)
    metrics = accumulate_gradients(trainer, micro)
    params = [p for p in trainer.model.parameters() if p.requires_grad] + trainer._critic_parameters()
    grad_norm = torch.nn.utils.clip_grad_norm_(params, trainer.config.optim.grad_clip)
    trainer.optimizer.step()
    return {**metrics, "grad_norm": float(grad_norm)}
