"""The issue-18 algorithm options as one object the training loop calls at fixed points.

:class:`AlgorithmHooks` owns the state those options keep across updates (TIGPO's task-graph memory, the
Headroom-Drift replay buffer) and saves it in the trainer's checkpoint. The loop calls, in order:

1. :meth:`~AlgorithmHooks.collect` — the step's tasks (TIGPO revisit slots first) and DAPO dynamic
   sampling (:mod:`.dynamic_sampling`); with the options off it is the plain collection.
2. :meth:`~AlgorithmHooks.shape` — TAO filtering and the EAPO tool-abuse penalty (:mod:`.tool_use`).
3. :meth:`~AlgorithmHooks.no_variance` — the zero-variance test (a TIGPO revisit group counts its earlier
   exploration returns).
4. :meth:`~AlgorithmHooks.replayed` — Headroom-Drift replay groups (:mod:`.replay`) to add to the batch.
5. :meth:`~AlgorithmHooks.settings` / :meth:`~AlgorithmHooks.estimate` — the registry estimator per group
   size (TAO can leave groups of different sizes), plus ``algorithm.graph_mix · A^G`` on any estimator.
6. :meth:`~AlgorithmHooks.record` — the step's groups into the memory and the buffer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from ...collect.trajectory import Trajectory
from ...errors import ConfigError
from . import AdvantageSettings, estimate, graph_credit
from .dynamic_sampling import collect_until_varied
from .replay import HeadroomDriftReplay, Scorer
from .tigpo import TaskGraphMemory
from .tool_use import drop_failed_tool_use, tool_abuse_penalty

_TRY = 9
"""Derived-seed purpose of the extra collections of dynamic sampling."""

Groups = list[list[Trajectory]]


def _ranks() -> int:
    """World size of an initialised ``torch.distributed`` group (1 without one)."""
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class AlgorithmHooks:
    """TIGPO memory, replay buffer, filters and estimator composition of one run (``config``: a TrainConfig)."""

    def __init__(self, config: Any):
        self.config, alg = config, config.algorithm
        self.memory = (TaskGraphMemory(revisit_fraction=alg.tigpo_revisit_fraction, seed=config.seed,
                                       max_tasks=alg.tigpo_memory_tasks) if alg.estimator == "tigpo" else None)
        self.replay = (HeadroomDriftReplay(capacity=alg.replay_buffer_groups, groups_per_step=alg.replay_groups,
                                           max_drift=alg.replay_max_drift) if alg.replay_groups > 0 else None)
        self.metrics: dict[str, float] = {}

    def collect(self, play: Any, sampler: Any, *, sampling: Any, seed: int, step: int):
        """``(trajectories, stats)`` of the step; ``play(tasks, sampling, seed)`` is one rollout collection.

        Collection 0 plays TIGPO's revisit tasks then the sampler's (just the sampler's without ``tigpo``)
        with the step's seeds; dynamic sampling's extra collections draw new tasks with derived seeds.
        Under ``torchrun`` each rank would decide on its own groups, so TIGPO and dynamic sampling refuse to run there.
        """
        from ...collect.rollout import RolloutStats
        from ...seeding import derive_seed

        if _ranks() > 1 and (self.memory is not None or self.config.algorithm.dynamic_sampling_tries > 1):
            raise ConfigError("algorithm.estimator=tigpo and dynamic_sampling_tries > 1 pick tasks from each rank's "
                              f"own groups, so the ranks' task lists would differ (expected 1 rank, got {_ranks()}); "
                              "train them without torchrun, or use graphgpo / dynamic_sampling_tries=1")
        n, made_stats = self.config.rollout.tasks_per_step, []

        def once(k: int) -> list[Trajectory]:
            if k == 0:
                tasks = self.memory.next_tasks(sampler.next, n, step) if self.memory is not None else sampler.next(n)
                trajectories, stats = play(tasks, sampling, seed)
            else:
                trajectories, stats = play(sampler.next(n), replace(sampling, seed=derive_seed(sampling.seed, _TRY, k)),
                                           derive_seed(seed, _TRY, k))
            made_stats.append(stats)
            return trajectories

        trajectories, made = collect_until_varied(once, target=n, tries=self.config.algorithm.dynamic_sampling_tries)
        total = RolloutStats(sum(s.env_steps for s in made_stats), sum(s.generated_tokens for s in made_stats),
                             sum(s.seconds for s in made_stats))
        self.metrics = {"collections": float(made)} if self.config.algorithm.dynamic_sampling_tries > 1 else {}
        return trajectories, total

    def shape(self, groups: Groups) -> Groups:
        """TAO: drop all-calls-failed trajectories; EAPO: penalise redundant calls by the group's success rate."""
        alg = self.config.algorithm
        if alg.tao_filter:
            before = sum(map(len, groups))
            groups = drop_failed_tool_use(groups)
            self.metrics["tao_dropped"] = float(before - sum(map(len, groups)))
        if alg.tool_abuse_penalty > 0:
            groups = [tool_abuse_penalty(g, alg.tool_abuse_penalty) for g in groups]
        return groups

    def no_variance(self, group: list[Trajectory]) -> bool:
        reference = self.memory.reference(group) if self.memory is not None else None
        return len({t.ret for t in group} | set(reference or ())) == 1

    def replayed(self, score: Scorer) -> Groups:
        """Stored groups to mix into this step (none without ``algorithm.replay_groups``)."""
        if self.replay is None:
            return []
        groups = self.replay.select(score)
        self.metrics.update(self.replay.last)
        return groups

    def settings(self) -> AdvantageSettings:
        alg = self.config.algorithm
        return AdvantageSettings(gamma=alg.gamma, gigpo_omega=alg.gigpo_omega, gae_lambda=alg.gae_lambda,
                                 graph_omega=alg.graph_omega, history=self.memory)

    def estimate(self, name: str, groups: Groups, settings: AdvantageSettings) -> list[list[list[float]]]:
        """The registry's estimator on each same-size bucket of groups (one bucket unless TAO dropped some),
        in ``groups`` order; plus ``graph_mix · A^G`` per turn when set. Per-group estimators are exact per
        bucket; ``reinforce_pp``'s batch std is then each bucket's."""
        by_size: dict[int, list[int]] = defaultdict(list)
        for i, g in enumerate(groups):
            by_size[len(g)].append(i)
        out: list[Any] = [None] * len(groups)
        for idx in by_size.values():
            for i, advantages in zip(idx, estimate(name, [groups[i] for i in idx], settings)):
                out[i] = advantages
        weight = self.config.algorithm.graph_mix
        if weight:
            out = [[[a + weight * s for a, s in zip(turns, step)] for turns, step in zip(advantages, graph_credit(g, self.memory))]
                   for advantages, g in zip(out, groups)]
        return out

    def record(self, groups: Groups, fresh: Groups, step: int) -> None:
        """Every group of the step into the TIGPO memory; the fresh trained ones into the replay buffer."""
        if self.memory is not None:
            self.memory.record(groups)
        if self.replay is not None:
            self.replay.add(fresh, step)

    def state_dict(self) -> dict[str, Any]:
        return {"memory": None if self.memory is None else self.memory.state_dict(),
                "replay": None if self.replay is None else self.replay.state_dict()}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        for name in ("memory", "replay"):
            if getattr(self, name) is not None and state and state.get(name) is not None:
                getattr(self, name).load_state_dict(state[name])
