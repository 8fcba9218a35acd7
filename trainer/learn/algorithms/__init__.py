"""Advantage estimators: small pure functions, and a registry that maps a config name to per-turn advantages.

Each registry entry takes the trajectories of one collection (grouped: ``trajectory.group``) and returns,
per trajectory, one advantage per turn; :func:`token_advantages` spreads them over the turn's sampled
tokens. ``ppo_gae`` (PPO: GAE over turns) reads the critic's ``turn_values``, which the trainer sets
from its value head (:mod:`trainer.learn.value`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...collect.trajectory import Trajectory
from ...errors import require
from .gae import gae_advantages
from .gigpo import discounted_returns, gigpo_advantages, step_group_advantages
from .graph import graph_step_advantages, mix
from .outcome import grpo_advantages, reinforce_pp_advantages, rloo_advantages
from .tigpo import cross_temporal_advantages

__all__ = ["ESTIMATORS", "CRITIC_ESTIMATORS", "AdvantageSettings", "estimate", "token_advantages", "group_by", "grpo_advantages",
           "rloo_advantages", "reinforce_pp_advantages", "gae_advantages", "gigpo_advantages",
           "step_group_advantages", "discounted_returns", "graph_credit"]


@dataclass
class AlgorithmConfig:
    """Advantage estimation."""

    estimator: str = "grpo"
    """One of ``grpo``, ``dr_grpo``, ``rloo``, ``reinforce_pp``, ``gigpo``, ``gigpo_mean``, ``ppo_gae``,
    ``graphgpo``, ``tigpo``."""
    gamma: float = 0.95
    gigpo_omega: float = 1.0
    gae_lambda: float = 0.95
    positive_only: bool = False
    """Self-imitation: clip advantages below at 0, so an update only raises the likelihood of better-than-
    average turns (Oh et al., 2018). With a weak start most rollouts fail; pushing their tokens down spreads
    probability over malformed text (entropy rises), which at small scale can swamp the few successes."""
    value_coef: float = 0.5
    """Weight of the critic's squared error (``ppo_gae`` only)."""
    filter_zero_variance: bool = True
    """Drop groups whose rollouts all got the same return (DAPO): they carry no group-relative signal."""
    graph_omega: float = 1.0
    """Weight of the graph credit ``A^G`` in ``graphgpo`` / ``tigpo`` (``trainer/learn/algorithms/graph.py``)."""
    graph_mix: float = 0.0
    """> 0 adds ``graph_mix · A^G`` (GraphGPO's graph credit) to any other estimator's per-turn advantages."""
    tigpo_revisit_fraction: float = 0.25
    """``tigpo``: fraction of each step's task groups that re-attempt earlier tasks (revisit slots)."""
    tigpo_memory_tasks: int = 1024
    """``tigpo``: tasks whose transitions and exploration returns are remembered (the least recent go first)."""
    replay_groups: int = 0
    """Headroom-Drift replay: stored groups mixed into each step's fresh batch (0: no replay)."""
    replay_max_drift: float = 0.1
    """Replay's drift gate: a stored group is used only while the mean |log-ratio| of its tokens under the
    current policy vs their sampling log-probs is at most this (nats)."""
    replay_buffer_groups: int = 64
    """Replay buffer size in groups (the oldest go first)."""
    tao_filter: bool = False
    """TAO: drop trajectories whose every tool call failed (the env rejected every action)."""
    tool_abuse_penalty: float = 0.0
    """EAPO: ``λ`` of the penalty ``λ · (group success rate)`` on each repeated tool call's reward (tool envs)."""
    dynamic_sampling_tries: int = 1
    """DAPO dynamic sampling: up to this many collections per step until ``rollout.tasks_per_step`` groups
    have non-zero variance (1: one collection, the plain behaviour)."""

    def __post_init__(self) -> None:
        require(self.estimator in ESTIMATORS,
                f"algorithm.estimator must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}")
        require(self.graph_mix >= 0 and not (self.graph_mix and self.estimator in ("graphgpo", "tigpo")),
                f"algorithm.graph_mix must be >= 0 and 0 with graphgpo/tigpo (they include A^G: set graph_omega), "
                f"got {self.graph_mix} with {self.estimator}")
        require(0 <= self.tigpo_revisit_fraction < 1,
                f"algorithm.tigpo_revisit_fraction must be in [0, 1), got {self.tigpo_revisit_fraction}")
        require(self.tigpo_memory_tasks >= 1, f"algorithm.tigpo_memory_tasks must be >= 1, got {self.tigpo_memory_tasks}")
        require(0 <= self.replay_groups <= self.replay_buffer_groups,
                f"algorithm.replay_groups must be in [0, replay_buffer_groups={self.replay_buffer_groups}], "
                f"got {self.replay_groups}")
        require(self.replay_max_drift > 0, f"algorithm.replay_max_drift must be > 0 (nats), got {self.replay_max_drift}")
        require(self.tool_abuse_penalty >= 0, f"algorithm.tool_abuse_penalty must be >= 0, got {self.tool_abuse_penalty}")
        require(self.dynamic_sampling_tries >= 1,
                f"algorithm.dynamic_sampling_tries must be >= 1 (1: no dynamic sampling), got {self.dynamic_sampling_tries}")


@dataclass(frozen=True)
class AdvantageSettings:
    """The knobs estimators read (a view of the algorithm config)."""

    gamma: float = 0.95
    """Discount over turns (GiGPO step returns)."""
    gigpo_omega: float = 1.0
    """Weight of GiGPO's step-level advantage."""
    gae_lambda: float = 0.95
    """GAE's λ (PPO)."""
    graph_omega: float = 1.0
    """Weight of the graph credit ``A^G`` in ``graphgpo`` and ``tigpo``."""
    history: Any = None
    """TIGPO's :class:`~trainer.learn.algorithms.tigpo.TaskGraphMemory` (detached statistics: earlier transitions and
    exploration returns), or ``None``: then ``tigpo`` is ``graphgpo``."""


Estimator = Callable[[list[list[Trajectory]], AdvantageSettings], list[list[list[float]]]]


def group_by(trajectories: Sequence[Trajectory]) -> list[list[Trajectory]]:
    """Trajectories grouped by ``group`` (the task's rollouts), in first-seen order."""
    groups: dict[int, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        groups[t.group].append(t)
    return list(groups.values())


def _outcome(fn: Callable[[torch.Tensor], torch.Tensor]) -> Estimator:
    """An outcome estimator over equal-size groups, its per-trajectory number repeated on every turn."""

    def estimator(groups: list[list[Trajectory]], settings: AdvantageSettings) -> list[list[list[float]]]:
        sizes = {len(g) for g in groups}
        if len(sizes) != 1:
            raise ValueError(f"outcome estimators need equal-size groups, got sizes {sorted(sizes)}")
        returns = torch.tensor([[t.ret for t in g] for g in groups], dtype=torch.float64)  # (n, G)
        advantages = fn(returns).tolist()
        return [[[a] * t.num_turns for a, t in zip(row, g)] for row, g in zip(advantages, groups)]

    return estimator


def _gigpo(normalize_std: bool) -> Estimator:
    def estimator(groups: list[list[Trajectory]], settings: AdvantageSettings) -> list[list[list[float]]]:
        return [gigpo_advantages([t.rewards for t in g], [t.state_keys for t in g], gamma=settings.gamma,
                                 omega=settings.gigpo_omega, normalize_std=normalize_std) for g in groups]

    return estimator


def graph_credit(group: list[Trajectory], history: Any = None) -> list[list[float]]:
    """``A^G`` of one group (:func:`~trainer.learn.algorithms.graph.graph_step_advantages`), over the batch's edges
    plus the history's transitions of the group's task when ``history`` is given."""
    extra = history.edges(group[0].task_index) if history is not None else ()
    return graph_step_advantages([t.state_keys for t in group], [t.won for t in group],
                                 [t.finish == "terminated" for t in group], extra_edges=extra)


def _graph(cross_temporal: bool) -> Estimator:
    """GraphGPO (GRPO's ``A^E``) or TIGPO (the cross-temporal ``A^E`` on revisit groups), plus ``ω · A^G``."""

    def estimator(groups: list[list[Trajectory]], settings: AdvantageSettings) -> list[list[list[float]]]:
        history = settings.history if cross_temporal else None
        out = []
        for g in groups:
            reference = history.reference(g) if history is not None else None
            episode = cross_temporal_advantages([t.ret for t in g], reference or [])  # no reference: GRPO
            out.append(mix(episode, graph_credit(g, history), settings.graph_omega))
        return out

    return estimator


def _ppo_gae(groups: list[list[Trajectory]], settings: AdvantageSettings) -> list[list[list[float]]]:
    """GAE over turns from the critic's ``turn_values`` (PPO); groups play no part."""
    out = []
    for group in groups:
        row = []
        for t in group:
            if t.turn_values is None or len(t.turn_values) != t.num_turns:
                raise ValueError("ppo_gae needs the critic's turn_values on every trajectory (the trainer sets them "
                                 "when algorithm.estimator=ppo_gae)")
            rewards, values = torch.tensor(t.rewards, dtype=torch.float64), torch.tensor(t.turn_values, dtype=torch.float64)
            row.append(gae_advantages(rewards, values, gamma=settings.gamma, lam=settings.gae_lambda)[0].tolist())
        out.append(row)
    return out


#: Estimators that need a critic (value head) in the trainer.
CRITIC_ESTIMATORS = frozenset({"ppo_gae"})

ESTIMATORS: dict[str, Estimator] = {
    "grpo": _outcome(grpo_advantages),
    "dr_grpo": _outcome(lambda r: grpo_advantages(r, normalize_std=False)),
    "rloo": _outcome(rloo_advantages),
    "reinforce_pp": _outcome(reinforce_pp_advantages),
    "gigpo": _gigpo(normalize_std=True),
    "gigpo_mean": _gigpo(normalize_std=False),
    "ppo_gae": _ppo_gae,
    "graphgpo": _graph(cross_temporal=False),
    "tigpo": _graph(cross_temporal=True),
}


def estimate(name: str, groups: list[list[Trajectory]], settings: AdvantageSettings = AdvantageSettings()):
    """Per-turn advantages of every trajectory of ``groups`` with the estimator ``name``."""
    if name not in ESTIMATORS:
        raise ValueError(f"unknown advantage estimator {name!r}; expected one of {', '.join(ESTIMATORS)}")
    return ESTIMATORS[name](groups, settings)


def token_advantages(trajectory: Trajectory, turn_advantages: Sequence[float]) -> list[float]:
    """One advantage per id: the turn's advantage on its sampled ids, 0 elsewhere."""
    return [turn_advantages[k] if k >= 0 else 0.0 for k in trajectory.token_turns]
