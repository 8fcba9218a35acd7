"""Headroom-Drift replay: a bounded buffer of trained groups, mixed back into the fresh on-policy batch.

Source: "Headroom-Drift Replay" (known here from its abstract only; no arXiv id could be found): a
group-level replay primitive for GRPO with two decisions, *headroom* ranking stored groups by remaining
learning value and *drift* gating them by compatibility with the current policy; the fresh stream is
unchanged. The
abstract names the two decisions, not their formulas; ours:

* **Stored.** Every group the trainer trained on (non-zero variance), as its trajectories: tokens, the
  sampler's log-probs (the ``π_old`` of the clipped loss when replayed), and the rewards, ``state_key``
  values and outcomes the estimator reads, so a replayed group's advantages are recomputed by the
  configured estimator with the fresh groups. At most ``capacity`` groups; the oldest go first.
* **Headroom** of a group with returns ``R`` and success rate ``p`` (fraction won), replayed ``u`` times:
  ``h = Var(R) · (1 − p) / (1 + u)``. ``Var(R)`` (population variance) is the group-relative signal the
  group still carries; ``1 − p`` is how far the task is from solved; each replay uses some of it up.
* **Drift** of a group under the current policy ``π_θ``: ``δ = mean |log π_θ(a) − log π_old(a)|`` over the
  group's sampled tokens. The log-probs come from the caller (:func:`current_logprobs`: one no-grad
  forward of the trainer's model), so this module stays pure.
* **Mix.** Candidates in decreasing headroom (ties: the newer first) are scored until ``k`` groups with
  ``δ ≤ max_drift`` are found (at most ``4k`` scored per step); a group over the gate is evicted (the policy
  only moves further from it). The chosen groups join the fresh groups of the step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...collect.trajectory import Trajectory

Scorer = Callable[[Sequence[Trajectory]], list[list[float]]]
"""Token segments -> the current policy's dense log-probs of each (aligned with ``token_ids``)."""


@dataclass
class StoredGroup:
    trajectories: list[Trajectory]
    step: int
    uses: int = 0


def headroom(returns: Sequence[float], won: Sequence[bool], uses: int = 0) -> float:
    """``Var(R) · (1 − p) / (1 + uses)``.

    >>> headroom([1.0, 0.0, 0.0, 0.0], [True, False, False, False])  # Var 0.1875, p 0.25
    0.140625
    """
    var = float(torch.tensor(list(returns), dtype=torch.float64).var(unbiased=False))
    p = sum(won) / len(won)
    return var * (1.0 - p) / (1 + uses)


def drift(segments: Sequence[Trajectory], current: Sequence[Sequence[float]]) -> float:
    """Mean ``|current − sampling_logprobs|`` over the sampled tokens of ``segments``.

    >>> s = Trajectory([5, 6, 7], [0, 1, 1], [0.0, -1.0, -2.0], [-1, 0, 0], 1)
    >>> drift([s], [[0.0, -1.5, -1.0]])  # (0.5 + 1.0) / 2
    0.75
    """
    total, count = 0.0, 0
    for s, logp in zip(segments, current, strict=True):
        for m, old, new in zip(s.loss_mask, s.sampling_logprobs, logp):
            if m:
                total, count = total + abs(new - old), count + 1
    return total / max(count, 1)


class HeadroomDriftReplay:
    """The buffer: :meth:`add` trained groups, :meth:`select` the ones to mix into this step."""

    def __init__(self, *, capacity: int, groups_per_step: int, max_drift: float):
        self.capacity, self.groups_per_step, self.max_drift = capacity, groups_per_step, max_drift
        self.groups: list[StoredGroup] = []
        self.last: dict[str, float] = {}

    def add(self, groups: Sequence[Sequence[Trajectory]], step: int) -> None:
        self.groups += [StoredGroup(list(g), step) for g in groups]
        del self.groups[:-self.capacity]

    def ranked(self) -> list[StoredGroup]:
        """Stored groups by decreasing headroom, the newer first on ties."""
        h = lambda g: headroom([t.ret for t in g.trajectories], [t.won for t in g.trajectories], g.uses)  # noqa: E731
        return sorted(reversed(self.groups), key=h, reverse=True)

    def select(self, score: Scorer) -> list[list[Trajectory]]:
        """Up to ``groups_per_step`` stored groups within the drift gate (the others scored are evicted)."""
        chosen, evicted, drifts = [], [], []
        for stored in self.ranked()[:4 * self.groups_per_step]:
            if len(chosen) == self.groups_per_step:
                break
            segments = [s for t in stored.trajectories for s in t.segments]
            delta = drift(segments, score(segments))
            drifts.append(delta)
            (chosen if delta <= self.max_drift else evicted).append(stored)
        self.groups = [g for g in self.groups if not any(g is e for e in evicted)]
        for stored in chosen:
            stored.uses += 1
        self.last = {"replay_groups": float(len(chosen)), "replay_evicted": float(len(evicted)),
                     "replay_drift_mean": sum(drifts) / len(drifts) if drifts else 0.0, "replay_buffer": float(len(self.groups))}
        return [list(g.trajectories) for g in chosen]

    def state_dict(self) -> dict[str, Any]:
        """Plain lists and numbers (checkpoints load with ``weights_only=True``)."""
        return {"groups": [{"step": g.step, "uses": g.uses, "trajectories": [dataclasses.asdict(t) for t in g.trajectories]}
                           for g in self.groups]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.groups = [StoredGroup([_trajectory(t) for t in g["trajectories"]], int(g["step"]), int(g["uses"]))
                       for g in state["groups"]]


def _trajectory(data: dict[str, Any]) -> Trajectory:
    data = dict(data)
    data["earlier"] = [_trajectory(e) for e in data.get("earlier", [])]
    return Trajectory(**data)


@torch.no_grad()
def current_logprobs(trainer: Any, segments: Sequence[Trajectory]) -> list[list[float]]:
    """The trainer's model's log-probs of each segment's ids (one no-grad forward), for :func:`drift`."""
    from ..logprobs import pack, token_logprobs

    c = trainer.config
    batch = pack(list(segments), trainer.policy.pad_id, device=trainer.device)
    logp, _ = token_logprobs(trainer.model, batch, temperature=c.rollout.temperature or 1.0, backend=c.loss.kernel_backend)
    return [logp[b, :len(s.token_ids)].tolist() for b, s in enumerate(segments)]
