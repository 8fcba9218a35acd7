"""Batched play for local models: every live episode's next reply comes from one ``generate`` call.

A local model (``hf:``, ``checkpoint:``, ``vllm:``) played one episode at a time decodes one row per forward
pass, which on a CPU is bound by reading the weights, not by arithmetic: 16 rows cost little more than one.
So :class:`BatchedPool` keeps up to ``batch`` episodes live in one thread and plays them in lockstep: each
turn, the prompts of all live episodes go to the policy's token sampler in one call
(:meth:`~agentgym_envs.policies.TokenPolicy.generate`, the trainer's sampler, inside its prefix-reuse scope so
a turn encodes only the new observation), then each episode steps its own env. An episode that ends hands
its record to the runner at once and a newly leased one takes its row at the next turn (continuous
batching: rows never wait for the slowest episode of a batch, and entries follow each other without a gap).

What stays as it was, one episode at a time (:func:`~leaderboards.episode.play_episode`):

* each turn's sampling seed is :func:`~leaderboards.episode.sampling_seed` (entry, episode index, turn),
  given to the sampler per row (``seeds=``), so no draw depends on the batch or the row. On the HF backend a
  row's generator is seeded exactly as a lone prompt's is, so batched and lone episodes draw the same
  numbers; what can differ is float rounding of the forward pass in a padded batch and with reused keys and
  values (~1e-6 in log-prob), which can flip a near-tie between two tokens. At temperature 0 the tiny
  policy's records are identical either way (tested), and a resumed run replays its episodes with the same
  seeds whatever their batch.
* records are made by the same :class:`~leaderboards.episode.EpisodePlay`, and stored one episode at a time
  by the runner's main thread (a finished episode is never redone).
* failures: an env's infrastructure failure fails only its episode; a transient policy failure (or a
  policy exception) fails every episode of that call, as it would have failed each alone.

Time: a reply's ``latency_s`` is its share of the batched call (the call's time over its rows, plus the
encoding of its own prompt), and an episode's ``wall_s`` is the sum of its shares, its env steps and its
reset: what the episode cost, not how long it waited for other rows.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from typing import Any

from agentgym_envs.policies import SamplingConfig

from .episode import EpisodePlay, InfraFailed, is_transient
from .records import InfraFailure
from .suite import Suite
from .workers import Job, Outcome, make_entry_env

#: Seconds the play thread waits for work before looking at its stop flag again.
IDLE_S = 0.2


def can_batch(policy: Any) -> bool:
    """Whether ``policy`` samples from token ids with a seed per row (the HF and vLLM backends)."""
    return callable(getattr(policy, "generate", None)) and callable(getattr(policy, "encode_chat", None))


class _Live:
    """An episode being played: its job, its future, its env and its :class:`EpisodePlay`."""

    def __init__(self, job: Job, future: Future, key: str, env: Any, play: EpisodePlay):
        self.job, self.future, self.key, self.env, self.play = job, future, key, env, play


class BatchedPool:
    """Plays submitted jobs with one shared token policy, up to ``batch`` episodes per ``generate``.

    Same interface as :class:`~leaderboards.workers.Pool` (``submit(job)`` returns a future of the job's
    :class:`~leaderboards.workers.Outcome`), plus :attr:`capacity`: how many jobs the runner keeps in flight
    (``batch`` rows and a few queued, so that a row that frees is refilled at once). The play thread owns the envs (one per live episode, reused across episodes
    of an entry) and the policy's prefix scope; it never touches the store.
    """

    def __init__(self, policy: Any, suite: Suite, *, batch: int):
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        self.policy, self.entries, self.rows = policy, suite.entries, batch
        self.capacity = batch + max(1, batch // 4)  # a few queued, so a row that frees is refilled at once
        self.sampling = SamplingConfig(**suite.sampling)
        self._queue: deque[tuple[Job, Future]] = deque()
        self._wake = threading.Condition()
        self._stop = False
        self._free: dict[str, list[Any]] = {}  # entry key -> idle envs
        self._thread = threading.Thread(target=self._run, name="bench-batched", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> Future:
        future: Future = Future()
        with self._wake:
            self._queue.append((job, future))
            self._wake.notify()
        return future

    def __enter__(self) -> BatchedPool:
        return self

    def __exit__(self, exc_type: Any, *exc: object) -> None:
        with self._wake:
            self._stop = True
            pending = list(self._queue)
            self._queue.clear()
            self._wake.notify()
        for _, future in pending:
            future.cancel()
        if exc_type is None:
            self._thread.join()
        # else (Ctrl-C, an abort): a generate in progress is not waited for; the daemon thread exits after it

    # ----------------------------------------------------------------- the play thread
    def _run(self) -> None:
        from trainer.collect.episodes import reusing_prefixes

        live: list[_Live] = []
        try:
            with reusing_prefixes(self.policy):
                while True:
                    live = [x for x in live if not x.future.cancelled()]
                    if not self._admit(live):
                        return
                    if live:
                        live = self._turn(live)
        except BaseException as e:  # a bug here must reach the runner, never leave it waiting forever
            with self._wake:
                stranded = [f for _, f in self._queue] + [x.future for x in live]
                self._queue.clear()
            for future in stranded:
                _settle(future, error=e)
            raise
        finally:
            for x in live:
                _close(x.env)
            for envs in self._free.values():
                for env in envs:
                    _close(env)

    def _admit(self, live: list[_Live]) -> bool:
        """Start queued jobs while rows are free (waiting while there is nothing to play); False: stop."""
        while True:
            with self._wake:
                if self._stop:
                    return False
                if not self._queue and not live:
                    self._wake.wait(IDLE_S)
                    continue
                if not self._queue or len(live) >= self.rows:
                    return True
                job, future = self._queue.popleft()
            started = self._start(job, future)
            if started is not None:
                live.append(started)

    def _start(self, job: Job, future: Future) -> _Live | None:
        """Reset an env for ``job``; a failure settles its future at once (infra: an outcome; else the error)."""
        entry = self.entries[job.entry]
        env = None
        try:
            free = self._free.get(entry.key)
            env = free.pop() if free else make_entry_env(entry)
            return _Live(job, future, entry.key, env, EpisodePlay(entry, job.episode_index, env))
        except InfraFailed as e:
            _close(env)
            _settle(future, Outcome(job, failure=InfraFailure(entry.key, job.episode_index, job.attempt, e.source,
                                                             e.error)))
        except Exception as e:  # a missing package, a suite asking for more tasks than a split has: stop the run
            _close(env)
            _settle(future, error=e)
        return None

    def _turn(self, live: list[_Live]) -> list[_Live]:
        """One reply for every live episode from one generate; returns the episodes still going."""
        began = time.perf_counter()
        prompts = [self.policy.encode_chat(x.play.messages()) for x in live]
        encode_s = (time.perf_counter() - began) / len(live)
        seeds = [x.play.seed() for x in live]
        began = time.perf_counter()
        try:
            completions = self.policy.generate(prompts, sampling=self.sampling, seeds=seeds)
        except Exception as e:
            for x in live:
                self._fail(x, e)
            return []
        share = encode_s + (time.perf_counter() - began) / len(live)
        going = []
        for x, completion, ids in zip(live, completions, prompts):
            try:
                x.play.advance(completion, share, len(ids))
            except InfraFailed as e:
                self._fail(x, e)
                continue
            if x.play.done:
                self._finish(x)
            else:
                going.append(x)
        return going

    def _finish(self, x: _Live) -> None:
        play = x.play
        cost = play.reset_s + play.policy_s + sum(s.env_s for s in play.steps)
        self._free.setdefault(x.key, []).append(x.env)
        _settle(x.future, Outcome(x.job, record=play.record(wall_s=cost)))

    def _fail(self, x: _Live, error: Exception) -> None:
        """Settle a live episode that failed: infrastructure (the env's, or a transient policy failure) is an
        outcome the runner retries; any other policy exception stops the run, as it does unbatched."""
        _close(x.env)  # an env whose episode failed is not trusted with the next one
        if isinstance(error, InfraFailed):
            failure = InfraFailure(x.key, x.job.episode_index, x.job.attempt, error.source, error.error)
        elif is_transient(error):
            failure = InfraFailure(x.key, x.job.episode_index, x.job.attempt, "policy",
                                   f"{type(error).__name__}: {error}")
        else:
            return _settle(x.future, error=error)
        _settle(x.future, Outcome(x.job, failure=failure))


def _settle(future: Future, outcome: Outcome | None = None, error: BaseException | None = None) -> None:
    """Give ``future`` its outcome (or error) unless the runner cancelled it meanwhile."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(outcome)
    except InvalidStateError:  # cancelled by the runner on its way out: nobody is waiting for it
        pass


def _close(env: Any) -> None:
    try:
        if env is not None:
            env.close()
    except Exception:
        pass
