"""The resumable runner: any policy on any suite, in parallel, every episode into the store exactly once.

Resumability comes from the store, not from a log of what was started: a run is ``(name, suite, version)``,
and its plan is every ``(entry, episode_index)`` of the suite minus those already stored. Episodes are pure
functions of their seeds (:mod:`leaderboards.episode`), so a run killed at any moment and restarted ends
with the same store as an uninterrupted one, and the store's unique keys make a duplicate impossible.

Several runners may work on one run in one store at once (started by hand, by a scheduler, or a restart
while the old process is still alive): each plays only episodes whose lease it holds
(:mod:`leaderboards.leases`), so they share the work, and a runner that dies has its episodes redone by the
others. A runner returns when every episode of the run is stored or has been given up by it, waiting for
episodes that other live runners are playing. Progress counts are the store's: ``done/total`` over all
runners, and the runner's own share.

Workers (:mod:`leaderboards.workers`) are threads or processes, or actors on a Ray cluster
(:mod:`leaderboards.ray_workers`); only this module's main thread writes the store. Infrastructure failures
are recorded in ``infra_errors`` and retried up to ``max_attempts`` times per episode; an episode that still fails stays unscored (a later run retries it). ``max_consecutive_infra``
failures in a row stop the run: something is down, and retrying every remaining episode would only hide that.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym_envs.policies import NoExpert
from trainer.models.backends.openai_http import EndpointError

from .errors import LeaderboardError, RunAborted
from .leases import Claim, Key, LeaseBook
from .policies import PolicySpec, parse_spec
from .store import Run, Store, open_store
from .suite import Suite, load_suite
from .workers import Job, Outcome, Pool

#: Seconds between looks at the store while other runners hold the episodes still missing.
POLL_S = 0.5


@dataclass(frozen=True)
class BenchOptions:
    """How to run (never what to measure: that is the suite's)."""

    workers: int = 1
    pool: str = "auto"
    """``thread``, ``process``, ``ray`` (actors on a Ray cluster: :mod:`leaderboards.ray_workers`) or ``auto``
    (processes for env-side baselines with several workers, else threads)."""
    ray_address: str | None = None
    """With ``pool="ray"``: the cluster to join (``auto``, ``HOST:PORT``); ``None`` starts a local one."""
    ray_cpus: float = 1.0
    """With ``pool="ray"``: CPUs reserved per worker actor (fractions allowed)."""
    run_name: str | None = None
    """The run's name in the store (default: the policy spec); a new name starts a separate run."""
    max_attempts: int = 3
    """Tries per episode when infrastructure fails (the env's or the endpoint's)."""
    max_consecutive_infra: int = 10
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    """Seconds per HTTP request."""
    progress: bool = True
    progress_s: float = 5.0
    """Seconds between progress lines."""
    lease_s: float = 60.0
    """How long an episode stays reserved for this runner without a heartbeat (renewed every quarter of it):
    after a crash, runners on other hosts wait this long before redoing its episodes (same host: at once)."""
    batch: int = 16
    """Local models (hf, checkpoint, vllm): episodes whose replies come from one ``generate``
    (:mod:`leaderboards.batched`); 1 plays them one at a time on the ``workers``."""
    dtype: str = "float32"
    """Local models: weight dtype, ``float32`` or ``bfloat16`` (then the default run name ends ``@bfloat16``)."""
    threads: int | None = None
    """Local models: torch CPU threads (0: every core; ``None``: the idle cores, see
    :func:`~leaderboards.policies.models.bench_threads`)."""

    def __post_init__(self) -> None:
        if self.workers < 1 or self.max_attempts < 1 or self.max_consecutive_infra < 1:
            raise ValueError("workers, max_attempts and max_consecutive_infra must be >= 1")
        if self.pool not in ("auto", "thread", "process", "ray"):
            raise ValueError(f"pool must be auto, thread, process or ray, got {self.pool!r}")
        if not self.ray_cpus > 0:
            raise ValueError(f"ray_cpus must be > 0, got {self.ray_cpus}")
        if self.batch < 1 or (self.threads is not None and self.threads < 0):
            raise ValueError(f"batch must be >= 1 and threads >= 0, got {self.batch} and {self.threads}")
        if self.dtype not in ("float32", "bfloat16"):
            raise ValueError(f"dtype must be float32 or bfloat16, got {self.dtype!r}")
        if not self.lease_s > 0 or not self.progress_s > 0:
            raise ValueError(f"lease_s and progress_s must be > 0 seconds, got {self.lease_s} and {self.progress_s}")


@dataclass
class BenchSummary:
    """What one invocation did; ``stored`` counts the run's episodes in the store at the end, by any runner."""

    run: Run
    planned: int
    already_stored: int
    played: int = 0
    """Episodes this runner stored (another runner's copy of the same episode, stored first, is not counted)."""
    infra_failures: int = 0
    gave_up: list[tuple[str, int]] = field(default_factory=list)
    wall_s: float = 0.0
    stored: int = 0


@dataclass
class _Drive:
    """The runner's state while it plays: what is in flight, to retry, given up, and its counters."""

    pool: Pool
    book: LeaseBook
    store: Store
    suite: Suite
    options: BenchOptions
    summary: BenchSummary
    index: dict[str, int]
    retries: deque = field(default_factory=deque)
    inflight: dict[Future, Job] = field(default_factory=dict)
    skip: set[Key] = field(default_factory=set)
    """Episodes this runner gave up on: never claimed again by it (another runner may still try them)."""
    elsewhere: Claim | None = None


def run_bench(suite: str | Path, policy: str, store_path: str | Path,
              options: BenchOptions = BenchOptions()) -> BenchSummary:
    """Evaluate ``policy`` (a SPEC) on ``suite`` into the store at ``store_path``; resumes a matching run.

    Errors are checked before anything is written: a malformed spec, a bad suite, an unreadable store and an
    unreachable endpoint each raise a :class:`~leaderboards.errors.LeaderboardError` with the store untouched.
    Other runners on the same run and store share the work (see the module docstring).
    """
    spec, loaded = parse_spec(policy), load_suite(suite)
    with open_store(store_path) as store:
        build = {"api_key_env": options.api_key_env, "timeout": options.timeout, "dtype": options.dtype,
                 "threads": options.threads}
        shared = None if spec.env_side else spec.build(**build)
        _preflight(shared, spec)
        name = options.run_name or spec.text + (f"@{options.dtype}" if options.dtype != "float32" else "")
        run = store.run(name, spec.text, loaded, _config(options, loaded, spec))
        plan = [(e.key, k) for e in loaded.entries for k in range(e.episodes)]
        summary = BenchSummary(run, loaded.episodes, store.count(run))
        _say(options, f"run {run.name!r} on {loaded.name} v{loaded.version}: {summary.already_stored} of "
                      f"{loaded.episodes} episodes already stored, {loaded.episodes - summary.already_stored} to play "
                      f"with {options.workers} worker(s)")
        start = time.perf_counter()
        with LeaseBook(store.path, run, plan, lease_s=options.lease_s) as book, \
                _pool(spec, shared, loaded, options, build) as pool:
            index = {e.key: i for i, e in enumerate(loaded.entries)}
            _drive(_Drive(pool, book, store, loaded, options, summary, index))
        summary.wall_s = time.perf_counter() - start
        summary.stored = store.count(run)
    return summary


def _pool(spec: PolicySpec, shared: Any, suite: Suite, options: BenchOptions, build: dict[str, Any]) -> Any:
    """Local threads or processes, or actors on a Ray cluster (each building its own policy, as processes do)."""
    if options.pool == "ray":
        from .ray_workers import RayPool

        return RayPool(spec, suite, workers=options.workers, build=build, address=options.ray_address,
                       cpus=options.ray_cpus)
    from .batched import BatchedPool, can_batch

    if spec.local_model and options.batch > 1 and can_batch(shared):
        return BatchedPool(shared, suite, batch=options.batch)
    return Pool(spec, shared, suite, workers=options.workers, pool=options.pool, build=build)


def _preflight(policy: Any, spec: PolicySpec) -> None:
    """Fail fast, before the store changes, when a model endpoint cannot be used."""
    check = getattr(policy, "check", None)
    if check is None:
        return
    try:
        check()
    except Exception as e:
        raise RunAborted(f"cannot use policy {spec.text}: {str(e).rstrip('.')}. Nothing was played and the store "
                         "was not changed.") from None


def _drive(d: _Drive) -> None:
    """Keep ``2 × workers`` leased episodes in flight; write each result as it lands; retry infra failures."""
    run, streak, noted = d.summary.run, 0, time.perf_counter()
    try:
        while True:
            _fill(d)
            if not d.inflight and not (d.elsewhere and d.elsewhere.elsewhere):
                break  # every episode is stored, or given up by this runner
            if not d.inflight:
                time.sleep(POLL_S)  # the rest are other runners' for now: theirs to store, or ours if they die
            for future in wait(d.inflight, timeout=POLL_S, return_when=FIRST_COMPLETED)[0] if d.inflight else ():
                outcome = future.result()
                del d.inflight[future]
                streak = 0 if outcome.record else streak + 1
                _settle(d, outcome)
                if streak >= d.options.max_consecutive_infra:
                    raise RunAborted(f"{streak} infrastructure failures in a row (last: {outcome.failure.error}); "
                                     f"stopping. {_kept(d.store, run)} Fix the cause and rerun the same command to "
                                     "resume.")
            if d.options.progress and time.perf_counter() - noted > d.options.progress_s:
                noted = time.perf_counter()
                _say(d.options, _progress(d))
    except KeyboardInterrupt:
        raise
    except RunAborted:
        _drain(d)
        raise
    except (LeaderboardError, NoExpert) as e:  # NoExpert: `expert` on an env without one
        _drain(d)
        raise RunAborted(f"{str(e).rstrip('.')}. {_kept(d.store, run)}") from None
    except Exception as e:
        _drain(d)
        if isinstance(e, EndpointError):
            raise RunAborted(f"the policy failed: {str(e).rstrip('.')}. {_kept(d.store, run)}") from None
        raise


def _fill(d: _Drive) -> None:
    """Submit retries first, then newly leased episodes, up to ``2 × workers`` in flight (a batched pool: its
    ``capacity``)."""
    room = getattr(d.pool, "capacity", 2 * d.options.workers) - len(d.inflight)
    while room > 0 and d.retries:
        job = d.retries.popleft()
        d.inflight[d.pool.submit(job)] = job
        room -= 1
    if room <= 0:
        return
    d.elsewhere = d.book.claim(room, d.skip)
    for entry, episode_index in d.elsewhere.keys:
        job = Job(d.index[entry], episode_index)
        d.inflight[d.pool.submit(job)] = job


def _progress(d: _Drive) -> str:
    """``done/total`` over all runners (the store's count), this runner's share, and who else is playing."""
    line = (f"  {d.store.count(d.summary.run)}/{d.summary.planned} episodes stored, {d.summary.played} by this "
            f"runner, {d.summary.infra_failures} infrastructure failure(s)")
    claim = d.book.claim(0, d.skip)  # a look: claims nothing, counts every episode other runners hold
    if claim.elsewhere:
        line += (f"; {claim.elsewhere} being played by {len(claim.holders)} other runner(s) "
                 f"({'; '.join(o.describe() for o in claim.holders)})")
    return line


def _settle(d: _Drive, outcome: Outcome) -> None:
    job, run = outcome.job, d.summary.run
    if outcome.record is not None:
        outcome.record.attempts = job.attempt
        d.summary.played += d.store.record_episode(run, outcome.record, lease_owner=d.book.owner.id)
        return
    failure = outcome.failure
    assert failure is not None
    d.store.record_infra_failure(run, failure)
    d.summary.infra_failures += 1
    key = (failure.entry, job.episode_index)
    if job.attempt < d.options.max_attempts:
        d.retries.appendleft(Job(job.entry, job.episode_index, job.attempt + 1))
    else:
        d.skip.add(key)
        d.book.release(key)
        d.summary.gave_up.append(key)
        _say(d.options, f"  gave up on {failure.entry} #{job.episode_index} after {job.attempt} attempts: "
                        f"{failure.error}")


def _drain(d: _Drive) -> None:
    """On the way out, keep every episode that did finish (not wasting work; never a partial one)."""
    for future in list(d.inflight):
        if future.cancel():
            continue
        try:
            outcome = future.result()
        except BaseException:
            continue
        if outcome.record is not None:
            d.store.record_episode(d.summary.run, outcome.record, lease_owner=d.book.owner.id)


def _kept(store: Store, run: Run) -> str:
    return f"The {len(store.finished(run))} episodes stored for run {run.name!r} are kept."


def _config(options: BenchOptions, suite: Suite, spec: PolicySpec) -> dict[str, Any]:
    import platform

    config = {"workers": options.workers, "pool": options.pool, "sampling": suite.sampling,
              "python": platform.python_version(), "agentgym": _version()}
    if spec.local_model:
        import torch

        config.update(batch=options.batch, dtype=options.dtype, threads=torch.get_num_threads())
    return config


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("agentgym")
    except Exception:
        return "unknown"


def _say(options: BenchOptions, line: str) -> None:
    if options.progress:
        print(line, file=sys.stderr, flush=True)
