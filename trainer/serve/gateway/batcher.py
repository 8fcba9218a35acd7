"""Concurrent sessions' calls batched into one ``policy.generate`` (opt-in: ``gateway.max_batch`` > 1).

Each call brings its prompt ids, its sampling settings and its own seed. The first waiting call becomes the
*leader*: it waits ``window_s`` for company, takes up to ``max_batch`` queued calls with the same settings (the
seed aside), samples them in one batch with one seed per row (``generate(..., seeds=...)``: a row's draws come
from its own generator, whatever the batch), and hands every caller its completion. No thread of its own.

With ``max_batch=1`` (the default) calls run one at a time and a session's tokens are bit-for-bit a function of
its seed and requests. Batched, the distribution is the same and the recorded log-probs are still the ones the
trainer recomputes (padding only), but a near-tie draw can differ in the last bits with the batch a call
happened to share: reproducible runs keep ``max_batch=1``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from agentgym_envs.policies import Completion, SamplingConfig


@dataclass
class _Call:
    ids: list[int]
    sampling: SamplingConfig
    result: Completion | None = None
    error: BaseException | None = None

    @property
    def key(self) -> SamplingConfig:
        return replace(self.sampling, seed=None)


class Batcher:
    """``generate(ids, sampling)`` for one call; calls that overlap in time share a policy batch."""

    def __init__(self, policy: Any, *, max_batch: int = 1, window_s: float = 0.005):
        if max_batch < 1 or window_s < 0:
            raise ValueError(f"expected max_batch >= 1 and window_s >= 0, got {max_batch} and {window_s}")
        self.policy, self.max_batch, self.window_s = policy, max_batch, window_s
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._leading = False
        self.batches = self.calls = 0

    def generate(self, ids: list[int], sampling: SamplingConfig) -> Completion:
        call = _Call(list(ids), sampling)
        with self._cond:
            self._queue.append(call)
        while True:
            with self._cond:
                while call.result is None and call.error is None and self._leading:
                    self._cond.wait()
                if call.error is not None:
                    raise call.error
                if call.result is not None:
                    return call.result
                self._leading = True
            self._lead()

    def _lead(self) -> None:
        """Sample one batch: the oldest queued call and those sharing its settings (up to ``max_batch``)."""
        if self.max_batch > 1 and self.window_s:
            time.sleep(self.window_s)
        with self._cond:
            key = self._queue[0].key
            batch = [c for c in self._queue if c.key == key][:self.max_batch]
            taken = {id(c) for c in batch}
            self._queue = [c for c in self._queue if id(c) not in taken]
        try:
            if len(batch) == 1:  # the call's own seed in its settings: exactly the unbatched path
                completions = self.policy.generate([batch[0].ids], sampling=batch[0].sampling)
            else:
                seeds = [c.sampling.seed if c.sampling.seed is not None else 0 for c in batch]
                completions = self.policy.generate([c.ids for c in batch], sampling=batch[0].sampling, seeds=seeds)
            for c, completion in zip(batch, completions):
                c.result = completion
        except BaseException as e:  # handed to every caller of the batch (the server answers 500)
            for c in batch:
                c.error = e
        finally:
            with self._cond:
                self.batches, self.calls = self.batches + 1, self.calls + len(batch)
                self._leading = False
                self._cond.notify_all()
