"""Leaderboard workers on Ray: one actor per worker, spread over a cluster's nodes (``agentgym bench --ray``).

Each actor is a :class:`~leaderboards.workers.Worker` (the policy built from its SPEC, one env per entry)
on some node of the cluster; Ray schedules it (``SPREAD``, ``cpus`` each, fractions allowed) and carries the
calls. :class:`RayPool` has the :class:`~leaderboards.workers.Pool` interface (``submit(job)`` → a future of
an :class:`~leaderboards.workers.Outcome`), so the runner is unchanged: its main thread, on the driver, stays
the only writer of the SQLite store, and resumability (each episode stored once) is the store's, as with
local workers.

Failure semantics:

* An actor or its node dies (SIGKILL, OOM, a removed node): every job it was playing or had queued comes
  back as an infrastructure failure (source ``worker``) that the runner records and retries like any other;
  a replacement actor starts. Actors are created with ``max_restarts=0`` and calls with
  ``max_task_retries=0``: Ray never replays an episode behind the runner's back (a restarted actor would
  rerun ``__init__`` and lose its env state anyway).
* Nothing waits forever on a worker Ray cannot place: the pool refuses to start when the cluster has fewer
  CPUs than ``workers × cpus``, and a job that finds no live actor within ``start_s`` is an infrastructure
  failure naming the cause (the runner's ``max_consecutive_infra`` then stops the run).
* An exception raised inside an actor (a missing env package, a non-transient policy error) reaches the
  runner as that exception, exactly as from a local worker.
* Actors are owned by the driver: when it exits, however it exits (``kill -9`` included), Ray ends them.

Ray carries our dataclasses between the driver and its actors with its own serialization (pickle): a
cluster is one trust domain (``docs/scaling.md``), never reachable by the agents or from outside.
"""

from __future__ import annotations

import math
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agentgym_envs.policies import NoExpert, SamplingConfig
from trainer.models.backends.openai_http import EndpointError

from .errors import LeaderboardError, RunAborted
from .policies import PolicySpec
from .records import InfraFailure
from .suite import Entry, Suite
from .workers import Job, Outcome, Worker

#: Seconds a new actor may take to start (import agentgym, build the policy) before the pool gives up on it.
START_S = 120.0
#: Exceptions raised inside an actor that reach the runner as themselves (the rest keep Ray's remote traceback).
PASS_THROUGH = (LeaderboardError, NoExpert, EndpointError)


class BenchActor:
    """The body of one Ray actor: a :class:`Worker`, plus where it runs (for tests and progress lines)."""

    def __init__(self, spec: PolicySpec, entries: tuple[Entry, ...], sampling: SamplingConfig,
                 build: dict[str, Any]):
        self.worker = Worker(spec.build(**build), entries, sampling)

    def play(self, job: Job) -> Outcome:
        return self.worker.play(job)

    def where(self) -> tuple[str, int]:
        """``(node id, pid)`` of this actor."""
        import ray

        return ray.get_runtime_context().get_node_id(), os.getpid()


@dataclass
class _Slot:
    """One worker's place in the pool: its current actor, whether it started, and how many jobs it holds."""

    actor: Any
    ready: Any
    """The ``where()`` reference of the actor's first call: done once the actor is up."""
    generation: int = 0
    started: bool = False
    inflight: int = 0
    where: tuple[str, int] | None = None
    lost: list[str] = field(default_factory=list)
    stale: Any = None
    """An actor found lost, to kill and replace from the runner's thread (never from Ray's callback thread)."""


class RayPool:
    """``workers`` Ray actors playing the run's jobs; use as a context manager (leaving kills the actors).

    ``address`` is a cluster to join (``auto``, ``HOST:PORT``, ``ray://...``); ``None`` starts a local
    cluster, sized to fit ``workers × cpus``, that ends with the pool.
    """

    def __init__(self, spec: PolicySpec, suite: Suite, *, workers: int, build: dict[str, Any],
                 address: str | None = None, cpus: float = 1.0, start_s: float = START_S):
        from agentgym_envs.vector.ray_cluster import RayUnavailableError, import_ray, init_ray

        if not cpus > 0:
            raise ValueError(f"cpus per Ray worker must be > 0, got {cpus}")
        try:
            ray = import_ray()
            self._owns_ray = not ray.is_initialized()
            if self._owns_ray and address:
                _check_reachable(address)
            if self._owns_ray:
                init_ray(address, num_cpus=None if address else max(os.cpu_count() or 1, math.ceil(workers * cpus)))
        except RayUnavailableError as e:
            raise RunAborted(f"{str(e).rstrip('.')}. Nothing was played.") from None
        self._ray, self._start_s, self._lock, self._closing = ray, start_s, threading.Lock(), False
        # Ray runs done-callbacks on its own IO thread, which ray.kill() and actor creation wait on: a callback
        # that took self._lock while _pick() held it around ray.kill() deadlocked the run (a CI hang). Callbacks
        # only hand the outcome to this thread.
        self._landing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ray-pool-landing")
        self._check_capacity(workers, cpus)
        remote = ray.remote(BenchActor).options(num_cpus=cpus, max_restarts=0, max_task_retries=0,
                                                scheduling_strategy="SPREAD")
        self._new = lambda: remote.remote(spec, suite.entries, SamplingConfig(**suite.sampling), build)
        self.entries = suite.entries
        self.slots = [self._start_slot() for _ in range(workers)]
        self._await_start()

    # ----------------------------------------------------------------- starting
    def _check_capacity(self, workers: int, cpus: float) -> None:
        total = self._ray.cluster_resources().get("CPU", 0.0)
        if total < workers * cpus:
            self.close()
            raise RunAborted(f"the Ray cluster has {total:g} CPUs, expected at least {workers} workers × {cpus:g} = "
                             f"{workers * cpus:g}; pass fewer --workers, a fraction with --ray-cpus, or add nodes. "
                             "Nothing was played.")

    def _start_slot(self, slot: _Slot | None = None) -> _Slot:
        actor = self._new()
        if slot is None:
            return _Slot(actor, actor.where.remote())
        slot.actor, slot.ready, slot.started, slot.where = actor, actor.where.remote(), False, None
        return slot

    def _await_start(self) -> None:
        """Wait for every first actor (up to ``start_s``): a policy that cannot be built fails here, before any job."""
        try:
            for slot in self.slots:
                slot.where = self._ray.get(slot.ready, timeout=self._start_s)
                slot.started = True
        except self._ray.exceptions.GetTimeoutError:
            self.close()
            raise RunAborted(f"a Ray worker did not start within {self._start_s:g} s (the cluster's resources: "
                             f"{self._ray.available_resources()}); nothing was played.") from None
        except self._ray.exceptions.RayError as e:
            self.close()
            raise RunAborted(f"a Ray worker could not start: {_first_line(e)}. Nothing was played.") from None

    def _pick(self) -> _Slot | None:
        """The started slot with the fewest jobs, waiting up to ``start_s`` for one (replacements may be starting)."""
        deadline = time.monotonic() + self._start_s
        while True:
            with self._lock:
                for slot in self.slots:
                    if slot.stale is not None:
                        self._kill(slot.stale)  # if it was only unreachable, it must not play on unseen
                        slot.stale = None
                        self._start_slot(slot)
                    elif not slot.started and self._ray.wait([slot.ready], timeout=0)[0]:
                        self._settle_start(slot)
                live = [s for s in self.slots if s.started]
                if live:
                    return min(live, key=lambda s: s.inflight)
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)

    def _settle_start(self, slot: _Slot) -> None:
        try:
            slot.where, slot.started = self._ray.get(slot.ready), True
        except self._ray.exceptions.RayError as e:  # the replacement died too: try another
            slot.lost.append(_first_line(e))
            slot.stale = slot.actor

    # ----------------------------------------------------------------- jobs
    def submit(self, job: Job) -> Future:
        """A future of the job's :class:`Outcome`; a lost actor or node is an infrastructure failure, never a hang."""
        out: Future = Future()
        slot = self._pick()
        if slot is None:
            out.set_result(self._failure(job, f"no Ray worker could be started within {self._start_s:g} s (the "
                                              f"cluster's free resources: {self._ray.available_resources()})"))
            return out
        with self._lock:
            slot.inflight += 1
            generation = slot.generation
            ref = slot.actor.play.remote(job)
        ref.future().add_done_callback(lambda done: self._hand_over(slot, generation, job, done, out))
        return out

    def _hand_over(self, slot: _Slot, generation: int, job: Job, done: Future, out: Future) -> None:
        """On Ray's IO thread: never block here (see ``_landing``)."""
        try:
            self._landing.submit(self._land, slot, generation, job, done, out)
        except RuntimeError:  # the pool is closed: nobody waits on ``out`` any more
            out.set_result(self._failure(job, "the Ray pool was closed while the job was in flight"))

    def _land(self, slot: _Slot, generation: int, job: Job, done: Future, out: Future) -> None:
        error = done.exception()
        with self._lock:
            if slot.generation == generation:
                slot.inflight -= 1
        if error is None:
            out.set_result(done.result())
        elif isinstance(error, self._ray.exceptions.RayTaskError):  # raised by our code inside the actor
            cause = getattr(error, "cause", None)
            out.set_exception(cause if isinstance(cause, PASS_THROUGH) else error)
        elif isinstance(error, self._ray.exceptions.RayError):  # the actor, its worker or its node is gone
            where = f"on node {slot.where[0][:12]}, pid {slot.where[1]} " if slot.where else ""
            with self._lock:
                if slot.generation == generation and not self._closing:
                    slot.lost.append(_first_line(error))
                    slot.inflight, slot.started, slot.stale = 0, False, slot.actor
                    slot.generation += 1  # the lost actor's other jobs fail too: they must not replace it again
            out.set_result(self._failure(job, f"the Ray worker {where}was lost: {_first_line(error)}"))
        else:
            out.set_exception(error)

    def _failure(self, job: Job, error: str) -> Outcome:
        entry = self.entries[job.entry]
        return Outcome(job, failure=InfraFailure(entry.key, job.episode_index, job.attempt, "worker", error))

    # ----------------------------------------------------------------- stopping
    def close(self) -> None:
        """Kill this pool's actors; shut Ray down if this pool started it."""
        self._closing = True
        for slot in getattr(self, "slots", []):
            self._kill(slot.actor)
        if hasattr(self, "_landing"):
            self._landing.shutdown(wait=False)
        if self._owns_ray:
            self._ray.shutdown()
            self._owns_ray = False

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:
            pass  # already gone

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse a ``HOST:PORT`` nothing listens on (``ray.init`` would wait on it for minutes); other forms pass."""
    import socket

    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", "ray://...": Ray's own lookup
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise RunAborted(f"cannot reach a Ray cluster at {address} ({e}); expected the head node's GCS address "
                         "(`ray start --head` prints it; docs/scaling.md), or --ray alone for a local cluster. "
                         "Nothing was played.") from None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines() or [type(error).__name__])[0][:300]
