"""A pool of warm sandboxes: starting one costs 15 ms (bwrap) to a second (Docker); acquiring costs nothing.

Sandboxes handed back are reset to pristine in a background thread before anyone gets them again, so a
user never sees another's files or processes. A sandbox whose reset fails is closed and replaced.

>>> with SandboxPool("bwrap", size=2) as pool:
...     with pool.sandbox() as box:
...         box.run("echo hi", timeout=5).stdout
b'hi\\n'
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Self

from .base import Limits, SandboxError
from .supervised import SupervisedSandbox


class SandboxPool:
    """Up to ``size`` sandboxes of one backend, started ahead of need (``warm``) and reused after reset."""

    def __init__(
        self, backend: str = "bwrap", size: int = 4, *, limits: Limits | None = None, warm: int | None = None,
        **options: Any,
    ):
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be a positive int, got {size!r}")
        self.backend, self.size = backend, size
        self._limits, self._options = limits, options
        self._idle: list[SupervisedSandbox] = []
        self._count = 0
        self._closed = False
        self._cond = threading.Condition()
        self._workers = ThreadPoolExecutor(max_workers=min(size, 4), thread_name_prefix="sandbox-pool")
        for sandbox in self._workers.map(lambda _: self._new(), range(size if warm is None else min(warm, size))):
            self._put(sandbox)

    def acquire(self, timeout: float | None = None) -> SupervisedSandbox:
        """A pristine sandbox: an idle warm one, a new one while under ``size``, else wait for a release."""
        with self._cond:
            while True:
                if self._closed:
                    raise SandboxError("the sandbox pool is closed")
                if self._idle:
                    return self._idle.pop()
                if self._count < self.size:
                    self._count += 1
                    break
                if not self._cond.wait(timeout):
                    raise TimeoutError(f"no sandbox became free within {timeout} s (pool size {self.size})")
        try:
            return self._make()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def release(self, sandbox: SupervisedSandbox) -> None:
        """Hand a sandbox back; it is reset in the background before it is handed out again."""
        self._workers.submit(self._recycle, sandbox)

    @contextmanager
    def sandbox(self, timeout: float | None = None) -> Iterator[SupervisedSandbox]:
        box = self.acquire(timeout)
        try:
            yield box
        finally:
            self.release(box)

    def close(self) -> None:
        with self._cond:
            self._closed, idle, self._idle = True, self._idle, []
            self._cond.notify_all()
        self._workers.shutdown(wait=True)
        for sandbox in idle:
            sandbox.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def idle(self) -> int:
        with self._cond:
            return len(self._idle)

    def _make(self) -> SupervisedSandbox:
        from . import make

        return make(self.backend, self._limits, **self._options)

    def _new(self) -> SupervisedSandbox:
        with self._cond:
            self._count += 1
        return self._make()

    def _recycle(self, sandbox: SupervisedSandbox) -> None:
        try:
            sandbox.reset()
        except Exception:  # a sandbox that cannot be reset is dropped; acquire() makes a new one
            sandbox.close()
            with self._cond:
                self._count -= 1
                self._cond.notify()
            return
        self._put(sandbox)

    def _put(self, sandbox: SupervisedSandbox) -> None:
        with self._cond:
            if self._closed:
                sandbox.close()
                return
            self._idle.append(sandbox)
            self._cond.notify()
