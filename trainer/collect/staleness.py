"""Bounded staleness for asynchronous collection: the config, the admission rule and the objective's switch.

Pure logic, no threads and no torch, so the rule can be driven directly by a property test
(tests/trainer/test_async_rollout.py); :mod:`trainer.collect.asynchronous` runs it from its collector threads.

**Versions.** The policy version ``v`` is the number of updates the trainer has made (``trainer.step``). A
sampled token carries the version of the weights that produced it (``Trajectory.token_versions``).

**Capacity (AReaL's rule).** With ``B`` groups per batch and a staleness bound ``S``, a collection of ``n``
groups may start only while ``in_flight + accepted + n ≤ (S + v + 1) · B``, where ``accepted`` counts every
group admitted so far (trained or buffered; dropped ones leave the count). With batches consumed oldest
first, a group started at version ``v₀`` is then trained by version ``v₀ + S`` at the latest.

**Staleness filter.** A unit's version is its *oldest* sampled token's (the group rule: a group, or a unit of
groups collected together, whose members straddle versions counts as old as its oldest member). A batch
taken at version ``v`` admits a unit only if ``v - version ≤ S``; older ones are dropped and counted. So no
trained token is ever more than ``S`` versions old, whatever the timings (the property test).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

BEHAVIOUR_WEIGHTS = ("tis_token", "tis_sequence", "mis_token", "mis_sequence")
"""``asynchronous.behaviour_weight``: π_prox/π_behav truncated (TIS) or masked outside [1/C, C] (MIS)."""


@dataclass
class AsyncConfig:
    """``asynchronous.*``: collection overlapped with updates under a staleness bound (docs/trainer.md)."""

    enabled: bool = False
    """Collect in background threads while the trainer updates (``false``: today's synchronous loop)."""
    max_staleness: int = 1
    """S: the most versions a trained token may lag the weights being updated (1: one-step-off; 0: no
    overlap, the synchronous loop's numbers exactly)."""
    collectors: int = 0
    """Collector threads, each with its own envs (``rollout.tasks_per_step × group_size`` of them); 0: S + 1,
    the most the capacity rule ever lets run at once."""
    behaviour_weight: str = "tis_token"
    """How the decoupled objective weighs π_prox/π_behav (:data:`BEHAVIOUR_WEIGHTS`); used when S > 0."""
    behaviour_cap: float = 2.0
    """C: TIS truncates the weight at C, MIS masks tokens (rows) whose weight is outside [1/C, C]."""

    def __post_init__(self) -> None:
        def require(ok: bool, message: str) -> None:
            if not ok:
                raise ConfigError(message)

        require(isinstance(self.max_staleness, int) and self.max_staleness >= 0,
                f"asynchronous.max_staleness must be an integer >= 0, got {self.max_staleness!r}")
        require(isinstance(self.collectors, int) and self.collectors >= 0,
                f"asynchronous.collectors must be an integer >= 0 (0: max_staleness + 1), got {self.collectors!r}")
        require(self.behaviour_weight in BEHAVIOUR_WEIGHTS,
                f"asynchronous.behaviour_weight must be one of {', '.join(BEHAVIOUR_WEIGHTS)}, got {self.behaviour_weight!r}")
        require(self.behaviour_cap > 1, f"asynchronous.behaviour_cap must be > 1, got {self.behaviour_cap}")

    @property
    def threads(self) -> int:
        return self.collectors or self.max_staleness + 1


def correction_of(config: Any) -> tuple[str, float]:
    """The update's ``(rollout correction mode, cap)``: the decoupled objective's behaviour weight when async
    collection runs with S > 0, else ``loss.rollout_correction`` (S = 0: every token is of the current version,
    π_prox is π_behav, and the loss is the synchronous one bit for bit)."""
    a = getattr(config, "asynchronous", None)
    if a is not None and a.enabled and a.max_staleness > 0:
        return a.behaviour_weight, a.behaviour_cap
    return config.loss.rollout_correction, config.loss.rollout_correction_cap


def unit_version(trajectories: list[Any], default: int) -> int:
    """The oldest version of any sampled token of ``trajectories`` (the group rule); ``default`` if none has one."""
    versions = [v for t in trajectories for s in t.segments for v, m in zip(s.token_versions, s.loss_mask) if m]
    return min(versions, default=default)


@dataclass
class Unit:
    """A finished collection: ``size`` groups, their version (oldest token's), and what it carries."""

    index: int
    version: int
    size: int
    payload: Any = None


@dataclass
class StalenessController:
    """AReaL's capacity rule and the staleness filter, in groups (see the module docstring).

    ``batch_size`` is B, ``max_staleness`` S. Call :meth:`try_start` before a collection, :meth:`finish` after
    it, :meth:`take` to form a batch at the trainer's current version. Not thread-safe: hold a lock.
    """

    batch_size: int
    max_staleness: int
    in_flight: int = 0
    accepted: int = 0
    dropped: int = 0
    """Groups dropped for staleness so far."""
    buffer: list[Unit] = field(default_factory=list)

    def resume_at(self, version: int) -> None:
        """Start counting at ``version`` (a resumed run): its ``version`` batches count as accepted, so the
        capacity left is the same S + 1 batches as at any version."""
        self.accepted = version * self.batch_size

    def capacity(self, version: int) -> int:
        return (self.max_staleness + version + 1) * self.batch_size

    def try_start(self, n: int, version: int) -> bool:
        """Reserve ``n`` groups if the capacity rule allows it at ``version``; returns whether it did."""
        if self.in_flight + self.accepted + n > self.capacity(version):
            return False
        self.in_flight += n
        return True

    def finish(self, unit: Unit, version: int) -> None:
        """A started collection ended: buffered, or dropped at once if already too stale for ``version``."""
        self.in_flight -= unit.size
        if version - unit.version > self.max_staleness:
            self.dropped += unit.size
        else:
            self.accepted += unit.size
            self.buffer.append(unit)

    def take(self, version: int) -> Unit | None:
        """The oldest admissible buffered unit for a batch at ``version`` (oldest version, then index), after
        dropping every buffered unit more than S versions old; ``None`` when none is ready."""
        stale = [u for u in self.buffer if version - u.version > self.max_staleness]
        for u in stale:
            self.buffer.remove(u)
            self.accepted -= u.size
            self.dropped += u.size
        if not self.buffer:
            return None
        best = min(self.buffer, key=lambda u: (u.version, u.index))
        self.buffer.remove(best)
        return best

    def untrained(self) -> list[int]:
        """Indices of buffered units (started, finished, not yet trained)."""
        return [u.index for u in self.buffer]
