"""The resumable runner: any policy on any suite, in parallel, every episode into the store exactly once.

Resumability comes from the store, not from a log of what was started: a run is ``(name, suite, version)``,
and its plan is every ``(entry, episode_index)`` of the suite minus those already stored. Episodes are pure
functions of their seeds (:mod:`leaderboards.episode`), so a run killed at any moment and restarted ends
with the same store as an uninterrupted one, and the store's unique keys make a duplicate impossible.

Workers are threads (model and HTTP policies: one shared model, I/O-bound calls) or processes (env-side
baselines, CPU-bound envs); only this module's main thread writes the store. Infrastructure failures are
recorded in ``infra_errors`` and retried up to ``max_attempts`` times per episode; an episode that still
fails stays unscored (a later run retries it). ``max_consecutive_infra`` failures in a row stop the run:
something is down, and retrying every remaining episode would only hide that.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from trainer.backends.openai_http import EndpointError
from trainer.policy import SamplingConfig

from .episode import InfraFailed, make_env, play_episode
from .errors import LeaderboardError, RunAborted, SuiteError
from .policies import PolicySpec, parse_spec
from .records import EpisodeRecord, InfraFailure
from .store import Run, Store, open_store
from .suite import Entry, Suite, load_suite


@dataclass(frozen=True)
class BenchOptions:
    """How to run (never what to measure: that is the suite's)."""

    workers: int = 1
    pool: str = "auto"
    """``thread``, ``process`` or ``auto`` (processes for env-side baselines with several workers, else threads)."""
    run_name: str | None = None
    """The run's name in the store (default: the policy spec); a new name starts a separate run."""
    max_attempts: int = 3
    """Tries per episode when infrastructure fails (the env's or the endpoint's)."""
    max_consecutive_infra: int = 10
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 120.0
    """Seconds per HTTP request."""
    progress: bool = True

    def __post_init__(self) -> None:
        if self.workers < 1 or self.max_attempts < 1 or self.max_consecutive_infra < 1:
            raise ValueError("workers, max_attempts and max_consecutive_infra must be >= 1")
        if self.pool not in ("auto", "thread", "process"):
            raise ValueError(f"pool must be auto, thread or process, got {self.pool!r}")


@dataclass
class BenchSummary:
    """What one invocation did."""

    run: Run
    planned: int
    already_stored: int
    played: int = 0
    infra_failures: int = 0
    gave_up: list[tuple[str, int]] = field(default_factory=list)
    wall_s: float = 0.0


@dataclass(frozen=True)
class Job:
    entry: int
    episode_index: int
    attempt: int = 1


@dataclass
class Outcome:
    job: Job
    record: EpisodeRecord | None = None
    failure: InfraFailure | None = None


def run_bench(suite: str | Path, policy: str, store_path: str | Path,
              options: BenchOptions = BenchOptions()) -> BenchSummary:
    """Evaluate ``policy`` (a SPEC) on ``suite`` into the store at ``store_path``; resumes a matching run.

    Errors are checked before anything is written: a malformed spec, a bad suite, an unreadable store and an
    unreachable endpoint each raise a :class:`~leaderboards.errors.LeaderboardError` with the store untouched.
    """
    spec, loaded = parse_spec(policy), load_suite(suite)
    with open_store(store_path) as store:
        shared = None if spec.env_side else spec.build(api_key_env=options.api_key_env, timeout=options.timeout)
        _preflight(shared, spec)
        run = store.run(options.run_name or spec.text, spec.text, loaded, _config(options, loaded))
        finished = store.finished(run)
        jobs = [Job(i, k) for i, e in enumerate(loaded.entries) for k in range(e.episodes)
                if (e.key, k) not in finished]
        summary = BenchSummary(run, loaded.episodes, len(finished))
        _say(options, f"run {run.name!r} on {loaded.name} v{loaded.version}: {len(finished)} of {loaded.episodes} "
                      f"episodes already stored, {len(jobs)} to play with {options.workers} worker(s)")
        start = time.perf_counter()
        prior = _prior_attempts(store, run)
        with _Pool(spec, shared, loaded, options) as pool:
            _drive(pool, jobs, store, run, loaded, options, summary, prior)
        summary.wall_s = time.perf_counter() - start
    return summary


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


def _drive(pool: _Pool, jobs: list[Job], store: Store, run: Run, suite: Suite, options: BenchOptions,
           summary: BenchSummary, prior: dict[tuple[str, int], int]) -> None:
    """Keep ``2 × workers`` episodes in flight; write each result as it lands; retry infra failures."""
    pending, inflight = deque(jobs), {}
    streak, last_note = 0, time.perf_counter()
    try:
        while pending or inflight:
            while pending and len(inflight) < 2 * options.workers:
                job = pending.popleft()
                inflight[pool.submit(job)] = job
            done, _ = wait(inflight, return_when=FIRST_COMPLETED)
            for future in done:
                outcome = future.result()
                del inflight[future]
                streak = 0 if outcome.record else streak + 1
                _settle(outcome, store, run, suite, options, summary, pending, prior)
                if streak >= options.max_consecutive_infra:
                    raise RunAborted(f"{streak} infrastructure failures in a row (last: {outcome.failure.error}); "
                                     f"stopping. {_kept(store, run)} Fix the cause and rerun the same command to resume.")
            if options.progress and time.perf_counter() - last_note > 5:
                last_note = time.perf_counter()
                _say(options, f"  {summary.already_stored + summary.played}/{summary.planned} episodes stored, "
                              f"{summary.infra_failures} infrastructure failure(s)")
    except KeyboardInterrupt:
        raise
    except RunAborted:
        _drain(inflight, store, run)
        raise
    except LeaderboardError as e:
        _drain(inflight, store, run)
        raise RunAborted(f"{str(e).rstrip('.')}. {_kept(store, run)}") from None
    except Exception as e:
        _drain(inflight, store, run)
        if isinstance(e, EndpointError):
            raise RunAborted(f"the policy failed: {str(e).rstrip('.')}. {_kept(store, run)}") from None
        raise


def _settle(outcome: Outcome, store: Store, run: Run, suite: Suite, options: BenchOptions, summary: BenchSummary,
            pending: deque, prior: dict[tuple[str, int], int]) -> None:
    job = outcome.job
    if outcome.record is not None:
        outcome.record.attempts = job.attempt
        summary.played += store.record_episode(run, outcome.record)
        return
    failure = outcome.failure
    assert failure is not None
    failure.attempt = job.attempt + prior.get((failure.entry, job.episode_index), 0)
    store.record_infra_failure(run, failure)
    summary.infra_failures += 1
    if job.attempt < options.max_attempts:
        pending.appendleft(Job(job.entry, job.episode_index, job.attempt + 1))
    else:
        summary.gave_up.append((suite.entries[job.entry].key, job.episode_index))
        _say(options, f"  gave up on {failure.entry} #{job.episode_index} after {job.attempt} attempts: {failure.error}")


def _drain(inflight: dict[Future, Job], store: Store, run: Run) -> None:
    """On the way out, keep every episode that did finish (not wasting work; never a partial one)."""
    for future in list(inflight):
        if future.cancel():
            continue
        try:
            outcome = future.result()
        except BaseException:
            continue
        if outcome.record is not None:
            store.record_episode(run, outcome.record)


def _kept(store: Store, run: Run) -> str:
    return f"The {len(store.finished(run))} episodes stored for run {run.name!r} are kept."


def _prior_attempts(store: Store, run: Run) -> dict[tuple[str, int], int]:
    counts: dict[tuple[str, int], int] = {}
    for row in store.infra_rows(run):
        key = (row["entry"], row["episode_index"])
        counts[key] = counts.get(key, 0) + 1
    return counts


def _config(options: BenchOptions, suite: Suite) -> dict[str, Any]:
    import platform

    return {"workers": options.workers, "pool": options.pool, "sampling": suite.sampling,
            "python": platform.python_version(), "agentgym": _version()}


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("agentgym")
    except Exception:
        return "unknown"


def _say(options: BenchOptions, line: str) -> None:
    if options.progress:
        print(line, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- workers
class _Worker:
    """Plays jobs in one thread or process: a policy, and one env per entry (reused across its episodes)."""

    def __init__(self, policy: Any, entries: tuple[Entry, ...], sampling: SamplingConfig):
        self.policy, self.entries, self.sampling = policy, entries, sampling
        self.envs: dict[str, Any] = {}

    def play(self, job: Job) -> Outcome:
        entry = self.entries[job.entry]
        try:
            env = self.envs.get(entry.key) or self.envs.setdefault(entry.key, _make(entry))
            return Outcome(job, record=play_episode(entry, job.episode_index, env, self.policy, self.sampling))
        except InfraFailed as e:
            self._drop(entry.key)  # an env whose infrastructure failed is not trusted with the next episode
            return Outcome(job, failure=InfraFailure(entry.key, job.episode_index, job.attempt, e.source, e.error))

    def _drop(self, key: str) -> None:
        env = self.envs.pop(key, None)
        try:
            if env is not None:
                env.close()
        except Exception:
            pass


def _make(entry: Entry) -> Any:
    """The entry's env; a missing package stops the run (retrying cannot install it), other failures are infra."""
    try:
        return make_env(entry)
    except ImportError as e:
        raise SuiteError(f"cannot make {entry.key}: {e}. Install the package its env family needs (see the "
                         "optional dependencies in pyproject.toml), or use a suite without it") from None
    except Exception as e:
        raise InfraFailed("env", f"could not make {entry.key}: {type(e).__name__}: {e}") from e


_PROCESS_WORKER: _Worker | None = None


def _play_in_process(job: Job) -> Outcome:
    assert _PROCESS_WORKER is not None, "worker process used before its initializer ran"
    return _PROCESS_WORKER.play(job)


def _init_process(spec: PolicySpec, entries: tuple[Entry, ...], sampling: SamplingConfig,
                  build: dict[str, Any]) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = _Worker(spec.build(**build), entries, sampling)


class _InlineExecutor(Executor):
    """One worker: play in the calling thread (a lone worker thread would only fight the writer for the GIL)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as e:
            future.set_exception(e)
        return future


class _Pool:
    """The workers of one run: threads sharing ``shared`` (or each building an env-side policy), or processes.

    ``submit(job)`` returns a future of the job's :class:`Outcome`.
    """

    def __init__(self, spec: PolicySpec, shared: Any, suite: Suite, options: BenchOptions):
        sampling = SamplingConfig(**suite.sampling)
        use_processes = options.pool == "process" or (options.pool == "auto" and spec.env_side and options.workers > 1)
        build = {"api_key_env": options.api_key_env, "timeout": options.timeout}
        self._local = threading.local()
        if use_processes:
            self.executor: Executor = ProcessPoolExecutor(options.workers, mp_context=get_context("spawn"),
                                                          initializer=_init_process,
                                                          initargs=(spec, suite.entries, sampling, build))
        elif options.workers == 1:
            self.executor = _InlineExecutor()
        else:
            self.executor = ThreadPoolExecutor(options.workers, thread_name_prefix="bench")
        self._processes = use_processes
        self._new_worker = lambda: _Worker(shared if shared is not None else spec.build(**build), suite.entries,
                                           sampling)

    def submit(self, job: Job) -> Future:
        if self._processes:
            return self.executor.submit(_play_in_process, job)
        return self.executor.submit(self._play_in_thread, job)

    def _play_in_thread(self, job: Job) -> Outcome:
        worker = getattr(self._local, "worker", None)
        if worker is None:
            worker = self._local.worker = self._new_worker()
        return worker.play(job)

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        self.executor.shutdown(wait=exc_type is None, cancel_futures=True)
