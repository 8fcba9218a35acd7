"""The runner's workers: threads or processes that play episodes and hand them back to the runner.

Workers never touch the store: each returns an :class:`Outcome` (a finished episode or an infrastructure
failure) to the runner's main thread, the only writer (``docs/architecture.md``, Leaderboards). Threads suit model and
HTTP policies (one shared model, I/O-bound calls); spawned processes suit env-side baselines on CPU-bound
envs. Worker processes are tied to the runner's life (:mod:`leaderboards.lifeline`), and the pool kills
those still running when the runner stops early, so no worker outlives its run.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

from agentgym_envs.policies import SamplingConfig

from .episode import InfraFailed, make_env, play_episode
from .errors import SuiteError
from .lifeline import tie_to_parent
from .policies import PolicySpec
from .records import EpisodeRecord, InfraFailure
from .suite import Entry, Suite


@dataclass(frozen=True)
class Job:
    """Play episode ``episode_index`` of entry number ``entry``; ``attempt`` counts this runner's tries."""

    entry: int
    episode_index: int
    attempt: int = 1


@dataclass
class Outcome:
    job: Job
    record: EpisodeRecord | None = None
    failure: InfraFailure | None = None


class Worker:
    """Plays jobs in one thread or process: a policy, and one env per entry (reused across its episodes)."""

    def __init__(self, policy: Any, entries: tuple[Entry, ...], sampling: SamplingConfig):
        self.policy, self.entries, self.sampling = policy, entries, sampling
        self.envs: dict[str, Any] = {}

    def play(self, job: Job) -> Outcome:
        entry = self.entries[job.entry]
        try:
            env = self.envs.get(entry.key) or self.envs.setdefault(entry.key, make_entry_env(entry))
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


def make_entry_env(entry: Entry) -> Any:
    """The entry's env; a missing package stops the run (retrying cannot install it), other failures are infra."""
    try:
        return make_env(entry)
    except ImportError as e:
        raise SuiteError(f"cannot make {entry.key}: {e}. Install the package its env family needs (see the "
                         "optional dependencies in pyproject.toml), or use a suite without it") from None
    except Exception as e:
        raise InfraFailed("env", f"could not make {entry.key}: {type(e).__name__}: {e}") from e


_PROCESS_WORKER: Worker | None = None


def _play_in_process(job: Job) -> Outcome:
    assert _PROCESS_WORKER is not None, "worker process used before its initializer ran"
    return _PROCESS_WORKER.play(job)


def _init_process(runner_pid: int, spec: PolicySpec, entries: tuple[Entry, ...], sampling: SamplingConfig,
                  build: dict[str, Any]) -> None:
    global _PROCESS_WORKER
    tie_to_parent(runner_pid)
    _PROCESS_WORKER = Worker(spec.build(**build), entries, sampling)


class _InlineExecutor(Executor):
    """One worker: play in the calling thread (a lone worker thread would only fight the writer for the GIL)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as e:
            future.set_exception(e)
        return future


class Pool:
    """The workers of one run: threads sharing ``shared`` (or each building an env-side policy), or processes.

    ``submit(job)`` returns a future of the job's :class:`Outcome`. Leaving the ``with`` block normally waits
    for the workers; leaving it with an exception (Ctrl-C, an abort) cancels what has not started and kills
    worker processes still playing, rather than waiting for their episodes.
    """

    def __init__(self, spec: PolicySpec, shared: Any, suite: Suite, *, workers: int, pool: str,
                 build: dict[str, Any]):
        sampling = SamplingConfig(**suite.sampling)
        use_processes = pool == "process" or (pool == "auto" and spec.env_side and workers > 1)
        self._local = threading.local()
        if use_processes:
            self.executor: Executor = ProcessPoolExecutor(workers, mp_context=get_context("spawn"),
                                                          initializer=_init_process,
                                                          initargs=(os.getpid(), spec, suite.entries, sampling, build))
        elif workers == 1:
            self.executor = _InlineExecutor()
        else:
            self.executor = ThreadPoolExecutor(workers, thread_name_prefix="bench")
        self._processes = use_processes
        self._new_worker = lambda: Worker(shared if shared is not None else spec.build(**build), suite.entries,
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

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        if exc_type is None:
            self.executor.shutdown(wait=True)
            return
        # ProcessPoolExecutor has no public way to stop a running task; its process table is the only handle.
        processes = list((getattr(self.executor, "_processes", None) or {}).values()) if self._processes else []
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.kill()
        for process in processes:
            process.join(timeout=5)
