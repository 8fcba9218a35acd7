"""The unsafe local backend: the supervisor as a plain host process in a temporary directory.

No isolation at all — no namespaces, the host's network, the host's files — only rlimits and a private
working directory. It exists for trusted debugging on machines without bubblewrap or Docker, is never a
default, and must be asked for by name (``sandboxes.make("unsafe")``). Paths like ``/work`` in the
other backends are the temporary directory here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from dataclasses import replace
from typing import Any, ClassVar

from ..base import Limits
from ..channel import Channel, PipeTransport
from ..supervised import BASE_ENV, SupervisedSandbox, supervisor_args


class UnsafeLocalSandbox(SupervisedSandbox):
    """Runs commands directly on the host (trusted code only); see the module docstring."""

    backend: ClassVar[str] = "unsafe"

    def __init__(self, limits: Limits | None = None, **overrides: Any):
        self._dir: str | None = None
        self._proc: subprocess.Popen | None = None
        super().__init__(limits, **overrides)

    def _launch(self) -> Channel:
        self._dir = tempfile.mkdtemp(prefix="agentgym-unsafe-")
        self.limits = replace(self.limits, writable=(self._dir,))
        return self._start_supervisor()

    def _start_supervisor(self) -> Channel:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        env = dict(BASE_ENV, HOME=self._dir, PATH=os.environ.get("PATH", BASE_ENV["PATH"]))
        config = self._supervisor_config(uid=None, nproc=False, workdir=self._dir)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, *supervisor_args(None), config.replace(BASE_ENV["HOME"], self._dir)],
                stdin=stdin_r, stdout=stdout_w, env=env, cwd=self._dir, close_fds=True, start_new_session=True,
            )
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        weakref.finalize(self, _stop, self._proc, self._dir, os.getpid())
        channel = Channel(PipeTransport(stdin_w, stdout_r), "unsafe local sandbox")
        channel.hello(timeout=20.0)
        return channel

    def kill_processes(self) -> None:
        """Restart the supervisor (its process group dies); files are kept.

        Outside a PID namespace there is no safe "kill everything": processes that left the group survive.
        """
        with self._lock:
            self._ensure_open()
            channel, self._channel, proc, self._proc = self._channel, None, self._proc, None
            if channel is not None:
                channel.close()
            _stop(proc, None)
            self._channel = self._start_supervisor()

    def _terminate(self) -> None:
        proc, directory, self._proc, self._dir = self._proc, self._dir, None, None
        _stop(proc, directory)


def _stop(proc: subprocess.Popen | None, directory: str | None, owner: int | None = None) -> None:
    """Kill the supervisor's process group and remove the working directory (only in the owning process)."""
    if owner is not None and owner != os.getpid():
        return
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait(timeout=5)
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
