"""Asynchronous collection: collector threads sample while the trainer updates, under bounded staleness.

With ``asynchronous.enabled`` the trainer no longer collects in :meth:`~trainer.run.loop.Trainer.train_step`.
:class:`AsyncCollection` runs ``asynchronous.collectors`` threads (S + 1 by default), each with its own
:class:`~trainer.collect.rollout.RolloutWorker` (its own envs) and its own tokenizer. A thread claims a *unit*
(``rollout.tasks_per_step`` groups: the tasks of one batch) when the capacity rule of
:class:`~trainer.collect.staleness.StalenessController` allows it, plays it, and buffers it; the trainer takes the
oldest admissible unit, updates, and publishes the new weights with their version (``trainer.step``).

**Weights.** :class:`WeightBoard` holds the newest published snapshot: a grad-free copy of the trainer's
model, made after each update (the trainer's own model is never read by a collector, so an update and a
collection never touch the same tensors). A collector takes the newest snapshot before *every* turn's
``generate`` (:class:`VersionedPolicy`), so an episode may straddle versions; each sampled id is tagged with
the version that produced it (``Trajectory.token_versions``), its log-prob is that version's (π_behav).

**Seeds.** Unit ``u`` plays its tasks with the seeds the synchronous loop uses at step ``u``, so with S = 0
(one unit at a time, every token of the current version) a run is the synchronous run bit for bit. With S > 0
which version samples which turn depends on timing: such runs are not bit-reproducible.

**Checkpoints.** The checkpoint's task-sampler state is the one before the oldest untrained unit was drawn,
with that unit's index (:meth:`AsyncCollection.state_dict`): a resumed run collects every untrained unit again,
with its own weights; nothing buffered is saved (it would be stale after a restart anyway).

Limits: one process (no ``torchrun``), ``policy.backend: hf``, ``rollout.source: envs``, no TIGPO or dynamic sampling (they choose tasks
from the step's own groups). The objective for S > 0 is decoupled PPO (:func:`trainer.collect.staleness.correction_of`).
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from agentgym_envs.policies import SamplingConfig

from ..errors import ConfigError
from ..seeding import derive_seed
from .rollout import RolloutStats, RolloutWorker
from .staleness import StalenessController, Unit, unit_version
from .trajectory import Trajectory

#: The synchronous loop's seed purposes (trainer.run.loop): unit u plays with step u's seeds.
_SAMPLE, _ENV = 1, 2


class Stopped(Exception):
    """Raised inside a collector's ``generate`` when the collection is closing: the unit is abandoned."""


class WeightBoard:
    """The newest published weights: ``(version, model snapshot)``, swapped atomically under a lock."""

    def __init__(self, model: Any, version: int):
        first = copy.deepcopy(model)
        for p in first.parameters():
            p.requires_grad_(False)
            p.grad = None
        self._lock = threading.Lock()
        self._latest: tuple[int, Any] = (version, first.eval())

    def publish(self, model: Any, version: int) -> None:
        """Copy ``model``'s weights into a fresh snapshot and make it the newest (collectors keep the old one
        until their next turn, then it is freed): at most one snapshot per collector plus the newest."""
        snapshot = copy.deepcopy(self.latest()[1])  # grad-free and in eval mode already
        snapshot.load_state_dict(model.state_dict())
        with self._lock:
            self._latest = (version, snapshot)

    def latest(self) -> tuple[int, Any]:
        with self._lock:
            return self._latest


class VersionedPolicy:
    """One collector's sampling policy: before every ``generate`` it takes the newest snapshot; ``version``
    is the version of the weights that sampled last (read by :class:`~trainer.collect.trajectory.TrajectoryBuilder`)."""

    def __init__(self, board: WeightBoard, make_policy: Any, stop: threading.Event):
        self.board, self._stop = board, stop
        self.version, model = board.latest()
        self.policy = make_policy(model)

    def generate(self, prompt_ids: list[list[int]], *, sampling: SamplingConfig, seeds: Any = None):
        if self._stop.is_set():
            raise Stopped()
        version, model = self.board.latest()
        if version != self.version or model is not self.policy.model:
            # one policy for the collector's life, so an open prefix-reuse scope survives new weights
            self.version = version
            self.policy.use_model(model)
        return self.policy.generate(prompt_ids, sampling=sampling, seeds=seeds)

    def __getattr__(self, name: str) -> Any:  # render_chat, encode, decode, ...: the wrapped policy's
        return getattr(self.__dict__["policy"], name)


def check_supported(config: Any, world_size: int) -> None:
    """Refuse settings async collection does not support, saying what to change (:class:`ConfigError`)."""
    alg, a = config.algorithm, config.asynchronous
    problems = [
        (world_size == 1, f"expected one process, got a world of {world_size} (torchrun)"),
        (config.policy.backend == "hf", f"expected policy.backend=hf, got {config.policy.backend!r}"),
        (config.rollout.backend == "local", f"expected rollout.backend=local, got {config.rollout.backend!r}"),
        (getattr(config.rollout, "source", "envs") == "envs",  # the gateway's harness plays its own sessions
         f"expected rollout.source=envs, got {getattr(config.rollout, 'source', 'envs')!r}"),
        (alg.estimator != "tigpo", "algorithm.estimator=tigpo picks tasks from the step's own groups"),
        (alg.dynamic_sampling_tries == 1, "algorithm.dynamic_sampling_tries > 1 re-collects within a step"),
        (a.max_staleness == 0 or config.loss.rollout_correction in ("none", a.behaviour_weight),
         f"loss.rollout_correction={config.loss.rollout_correction!r} and asynchronous.behaviour_weight="
         f"{a.behaviour_weight!r} are one correction (pi_prox / pi_behav): set only asynchronous.behaviour_weight"),
    ]
    for ok, why in problems:
        if not ok:
            raise ConfigError(f"asynchronous.enabled=true cannot run here: {why}; set asynchronous.enabled=false "
                              "or change that setting")


class AsyncCollection:
    """The collector threads of one trainer, their staleness controller and the units they buffered."""

    def __init__(self, trainer: Any):
        config = trainer.config
        check_supported(config, trainer.world.size)
        self.trainer, self.config = trainer, config.asynchronous
        self.batch_groups = config.rollout.tasks_per_step
        self.controller = StalenessController(self.batch_groups, self.config.max_staleness)
        self.cond = threading.Condition()
        self.version = trainer.step
        self.next_unit = 0
        self._pre_draw: dict[int, dict[str, int]] = {}  # unit -> the sampler's state before its tasks were drawn
        self._in_flight: set[int] = set()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._dropped_reported = 0  # groups dropped up to the last batch's metrics
        self.board: WeightBoard | None = None

    # ------------------------------------------------------------ the trainer's side
    def next_batch(self) -> tuple[list[Trajectory], dict[str, float]]:
        """Block until an admissible unit is buffered; its trajectories and the step's collection metrics."""
        if self.board is None:
            self._start()
        wait_start = time.perf_counter()
        with self.cond:
            while True:
                if self._error is not None:
                    raise self._error
                unit = self.controller.take(self.version)
                self._forget_finished()
                if unit is not None:
                    break
                self.cond.wait(timeout=1.0)
            self.cond.notify_all()  # capacity may have freed (drops)
            in_flight, dropped = self.controller.in_flight, self.controller.dropped
        dropped_now, self._dropped_reported = dropped - self._dropped_reported, dropped
        trajectories, stats = unit.payload
        return trajectories, {**rollout_metrics(trajectories, stats), **self._staleness_metrics(trajectories, unit),
                              "async_wait_s": time.perf_counter() - wait_start, "async_in_flight_groups": float(in_flight),
                              "async_dropped_groups": float(dropped), "async_dropped_now": float(dropped_now)}

    def published(self) -> None:
        """The trainer made an update: publish its weights as version ``trainer.step``."""
        if self.board is None:
            return
        self.board.publish(self.trainer.model, self.trainer.step)
        with self.cond:
            self.version = self.trainer.step
            self.cond.notify_all()

    def _staleness_metrics(self, trajectories: list[Trajectory], unit: Unit) -> dict[str, float]:
        ages = [self.version - v for t in trajectories for s in t.segments
                for v, m in zip(s.token_versions, s.loss_mask) if m]
        return {"async_staleness_max": float(self.version - unit.version),
                "async_staleness_mean": sum(ages) / max(len(ages), 1), "async_unit": float(unit.index)}

    # ------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Any]:
        """The oldest untrained unit's index and the sampler's state before its tasks were drawn."""
        with self.cond:
            oldest = min(self._pre_draw, default=None)
            if oldest is None:
                return {"next_unit": self.next_unit, "sampler": self.trainer.sampler.state_dict()}
            return {"next_unit": oldest, "sampler": dict(self._pre_draw[oldest])}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        if state is not None:
            self.next_unit = int(state["next_unit"])
            self.trainer.sampler.load_state_dict(state["sampler"])

    def close(self) -> None:
        """Stop the collectors (a unit being played is abandoned at its next turn) and close their envs."""
        self._stop.set()
        with self.cond:
            self.cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=120)
        self._threads = []

    # ------------------------------------------------------------ the collectors' side
    def _start(self) -> None:
        self.version = self.trainer.step  # a resumed run starts at its checkpoint's version
        self.controller.resume_at(self.version)
        self.board = WeightBoard(self.trainer.model, self.version)
        for k in range(self.config.threads):
            thread = threading.Thread(target=self._collector, name=f"async-collector-{k}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _claim(self) -> tuple[int, list[int]] | None:
        """Wait for capacity; the next unit's index and tasks (``None`` once stopping)."""
        with self.cond:
            while not self._stop.is_set():
                if self.controller.try_start(self.batch_groups, self.version):
                    u, self.next_unit = self.next_unit, self.next_unit + 1
                    self._pre_draw[u] = self.trainer.sampler.state_dict()
                    self._in_flight.add(u)
                    return u, self.trainer.sampler.next(self.batch_groups)
                self.cond.wait(timeout=1.0)
        return None

    def _collector(self) -> None:
        trainer, r = self.trainer, self.trainer.config.rollout
        worker = None
        try:
            worker = RolloutWorker(trainer.train_spec, tasks_per_batch=r.tasks_per_step, group_size=r.group_size,
                                   max_context_tokens=r.max_context_tokens, mode=r.mode,
                                   invalid_penalty=r.invalid_penalty, stall_penalty=r.stall_penalty,
                                   revisit_penalty=r.revisit_penalty,
                                   fold_keep_turns=r.fold_keep_turns,
                                   sample_unit=trainer.sample_unit, turn_window=r.turn_window)
            policy = VersionedPolicy(self.board, _policy_maker(trainer), self._stop)
            while (claim := self._claim()) is not None:
                self._play(worker, policy, *claim)
        except Stopped:
            pass
        except BaseException as err:  # handed to the trainer's next next_batch, never lost in a thread
            with self.cond:
                self._error = err
                self.cond.notify_all()
        finally:
            if worker is not None:
                worker.close()

    def _play(self, worker: RolloutWorker, policy: VersionedPolicy, u: int, tasks: list[int]) -> None:
        c = self.trainer.config
        sampling = SamplingConfig(temperature=c.rollout.temperature, top_p=c.rollout.top_p,
                                  max_new_tokens=c.rollout.max_new_tokens, seed=derive_seed(c.seed, _SAMPLE, u))
        trajectories, stats = worker.collect(policy, tasks, sampling=sampling, seed=derive_seed(c.seed, _ENV, u),
                                             group_offset=0)
        unit = Unit(u, unit_version(trajectories, policy.version), self.batch_groups, (trajectories, stats))
        with self.cond:
            self._in_flight.discard(u)
            self.controller.finish(unit, self.version)
            self._forget_finished()
            self.cond.notify_all()

    def _forget_finished(self) -> None:
        """Keep pre-draw sampler states only of units neither trained nor dropped (lock held)."""
        keep = self._in_flight | set(self.controller.untrained())
        self._pre_draw = {u: s for u, s in self._pre_draw.items() if u in keep}


def _policy_maker(trainer: Any) -> Any:
    """A function from a weight snapshot to an HF policy with this collector's own tokenizer copy (the class of
    the trainer's own policy, :class:`~trainer.models.backends.hf.HFPolicy`: collection names no backend)."""
    policy_type = type(trainer.policy)
    tokenizer = copy.deepcopy(trainer.policy.tokenizer)
    kwargs = trainer.policy.chat_template_kwargs
    return lambda model: policy_type(model, tokenizer, chat_template_kwargs=kwargs)


def rollout_metrics(trajectories: list[Trajectory], stats: RolloutStats) -> dict[str, float]:
    """The synchronous loop's collection metrics of one batch (reward, success, turns, throughput)."""
    done = [t for t in trajectories if t.infra_error is None]
    n = max(len(done), 1)
    return {"reward": sum(t.ret for t in done) / n, "success": sum(t.won for t in done) / n,
            "turns": sum(t.num_turns for t in done) / n, "infra_errors": len(trajectories) - len(done),
            "tokens_per_s": stats.tokens_per_s, "env_steps_per_s": stats.env_steps_per_s, "rollout_s": stats.seconds}
