"""The ``Sandbox`` protocol implemented once, over the supervisor channel; backends only start the supervisor.

A backend subclass provides ``_launch()`` (start the sandbox and its supervisor, return a ready
:class:`~sandboxes.channel.Channel`) and ``_terminate()`` (stop it for good), and may provide
``_oom_kills()`` (the sandbox cgroup's OOM-kill counter). Everything else — commands, files, shell
sessions, spawned processes, timeouts, output bounds, recovery from a dead supervisor — lives here, so the
three backends behave identically.

A command the kernel killed because the *sandbox as a whole* ran out of memory is the command's outcome:
exit code 137 (SIGKILL) with :data:`OOM_NOTE` appended to its stderr, never an exception.

A sandbox belongs to the process that created it. After ``fork`` the child's copy refuses every request
(its pipes are shared with the parent's) and closing it leaves the parent's sandbox running.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import marshal
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Self

from .base import ExecResult, Limits, SandboxDied, SandboxError, ShellResult, render_stream
from .channel import Channel

_INSIDE = Path(__file__).parent / "inside"
_SOURCES = {name: (_INSIDE / name).read_text() for name in ("procs.py", "supervisor.py")}
#: ``python3 -c BOOTSTRAP <procs> <supervisor> <config>`` runs the supervisor without any file in the sandbox
#: (which may be a bare image with only python3): the two modules travel as arguments, as source or, when
#: the sandbox's Python reads the host's bytecode, as marshalled code (compiling them costs ~6 ms a start).
_BOOTSTRAP = (
    "import sys, marshal, binascii; procs = type(sys)('procs'); sys.modules['procs'] = procs; "
    "load = {load}; exec(load(sys.argv[1], 'procs.py'), procs.__dict__); "
    "exec(load(sys.argv[2], 'supervisor.py'), {{'__name__': '__main__'}})"
)
_FROM_SOURCE = "lambda text, name: compile(text, name, 'exec')"
_FROM_BYTECODE = "lambda text, name: marshal.loads(binascii.a2b_base64(text))"


@functools.cache
def supervisor_args(python_root: Path | None) -> tuple[str, ...]:
    """The interpreter arguments that start the supervisor, for a Python installed under ``python_root``."""
    if python_root is not None and _bytecode_magic(str(python_root)) == importlib.util.MAGIC_NUMBER:
        code = [
            base64.b64encode(marshal.dumps(compile(text, name, "exec"))).decode()
            for name, text in _SOURCES.items()
        ]
        return ("-I", "-S", "-c", _BOOTSTRAP.format(load=_FROM_BYTECODE), *code)
    return ("-I", "-S", "-c", _BOOTSTRAP.format(load=_FROM_SOURCE), *_SOURCES.values())


@functools.cache
def _bytecode_magic(root: str) -> bytes | None:
    """The bytecode magic number of the Python under ``root`` (read from one of its standard-library .pyc)."""
    for pyc in Path(root).glob("usr/lib/python3*/__pycache__/*.pyc"):
        with open(pyc, "rb") as f:
            return f.read(4)
    return None


SANDBOX_UID = SANDBOX_GID = 1000
GRACE_S = 15.0  # beyond a command's own timeout: killing it, draining pipes, restarting a stuck shell
MAX_FILE_BYTES = 64 << 20
BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/home/agent", "USER": "agent", "LOGNAME": "agent", "SHELL": "/bin/bash",
    "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb", "PYTHONDONTWRITEBYTECODE": "1",
}


OOM_NOTE = "\nsandbox: killed: the sandbox ran out of memory (its {mb} MB limit covers all its processes and files)\n"


def _b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")


def _stream(answer: dict[str, Any], name: str) -> tuple[bytes, int]:
    head, tail = base64.b64decode(answer.get(name, "")), base64.b64decode(answer.get(name + "_tail", ""))
    dropped = int(answer.get(name + "_dropped", 0))
    return render_stream(head, tail, dropped), max(dropped, 0)


def _check_timeout(timeout: float) -> float:
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not (0 < timeout < math.inf):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


class SupervisedSandbox:
    """A sandbox whose PID 1 is the supervisor; see :class:`sandboxes.base.Sandbox` for the contract."""

    backend: ClassVar[str] = "abstract"
    #: Whether the root filesystem is read-only, so emptying the writable mounts restores the image.
    in_place_reset: bool = False

    def __init__(self, limits: Limits | None = None, **overrides: Any):
        self.limits = replace(limits or Limits(), **overrides)
        self._lock = threading.RLock()
        self._channel: Channel | None = None
        self._closed = False
        self._next_id = 0
        self._owner_pid = os.getpid()
        self._channel = self._launch()

    # ----------------------------------------------------------------- backend hooks
    def _launch(self) -> Channel:
        raise NotImplementedError

    def _terminate(self) -> None:
        raise NotImplementedError

    def _oom_kills(self) -> int | None:
        """How many processes the kernel has OOM-killed in the whole sandbox so far (None: not known)."""
        return None

    def _supervisor_config(self, *, uid: int | None, nproc: bool, workdir: str | None = None) -> str:
        """The JSON the supervisor reads from its argv: identity to run commands as, limits, base env."""
        mb = 1 << 20
        limits = {
            "cpu": self.limits.cpu_seconds, "as": self.limits.memory_mb * mb, "fsize": self.limits.file_size_mb * mb,
            "nofile": self.limits.open_files, "core": 0, "nproc": self.limits.processes if nproc else None,
        }
        gid = None if uid is None else SANDBOX_GID
        config = {"uid": uid, "gid": gid, "workdir": workdir or self.limits.workdir, "limits": limits, "env": BASE_ENV}
        return json.dumps(config)

    # ----------------------------------------------------------------- the protocol
    def run(
        self, command: str | list[str], *, timeout: float, stdin: bytes | None = None,
        cwd: str | None = None, env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run ``command`` (a string goes to ``bash -c``); its failure is a result, never an exception."""
        timeout = _check_timeout(timeout)
        if isinstance(command, str):
            argv = ["bash", "-c", command]
        elif isinstance(command, (list, tuple)) and command and all(isinstance(a, str) for a in command):
            argv = list(command)
        else:
            raise ValueError(f"command must be a string or a non-empty list of strings, got {command!r:.80}")
        ooms = self._oom_kills()
        answer = self._request(
            "run", timeout + GRACE_S, argv=argv, timeout=timeout, stdin=_b64(stdin), cwd=cwd, env=env or {},
            max_output=self.limits.output_bytes,
        )
        with self._untrusted():
            stdout, out_dropped = _stream(answer, "stdout")
            stderr, err_dropped = _stream(answer, "stderr")
            code, timed_out = int(answer["exit_code"]), bool(answer["timed_out"])
            stderr += self._oom_note(ooms, code, timed_out)
            return ExecResult(stdout, stderr, code, timed_out, float(answer["duration_s"]), out_dropped + err_dropped)

    def _oom_note(self, before: int | None, exit_code: int, timed_out: bool) -> bytes:
        """:data:`OOM_NOTE` when a command died of SIGKILL while the sandbox's OOM-kill counter went up."""
        if before is None or timed_out or exit_code != 128 + 9:
            return b""
        after = self._oom_kills()
        return OOM_NOTE.format(mb=self.limits.sandbox_memory_mb).encode() if after is not None and after > before else b""

    def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        """Write ``data`` at ``path`` inside the sandbox (parents created), as the sandbox's user."""
        self._check_path(path)
        if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_FILE_BYTES:
            raise ValueError(f"data must be bytes of at most {MAX_FILE_BYTES} bytes, got {type(data).__name__}")
        self._request("write", 60.0, path=path, data=_b64(bytes(data)), mode=mode)

    def read_file(self, path: str, *, max_bytes: int = 32 << 20) -> bytes:
        """Read ``path`` inside the sandbox (at most ``max_bytes``; larger files raise SandboxError)."""
        self._check_path(path)
        answer = self._request("read", 60.0, path=path, max_bytes=max_bytes)
        with self._untrusted():
            return base64.b64decode(answer["data"])

    def reset(self) -> None:
        """Back to the pristine image: no files, processes or sessions of before survive.

        With a read-only root (``in_place_reset``) this kills every process and empties the writable
        tmpfs mounts — milliseconds, and the same state as a new sandbox; otherwise, or if that fails,
        the sandbox is replaced.
        """
        with self._lock:
            self._ensure_open()
            if self.in_place_reset and self._channel is not None:
                try:
                    self._request("killall", 30.0)
                    self._request("wipe", 60.0, paths=[*self.limits.writable, "/dev/shm"])
                    return
                except SandboxError:
                    pass
            self._stop_channel()
            self._channel = self._launch()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._owned():
                    self._stop_channel()
                else:  # a forked child's copy: forget it, the parent's sandbox lives on
                    self._channel = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- sessions and processes
    def open_shell(self, *, cwd: str | None = None, env: dict[str, str] | None = None) -> ShellSession:
        """A live bash session in the sandbox: state persists between commands (see :class:`ShellSession`)."""
        sid = self._new_id("shell")
        self._request("shell_open", 30.0, sid=sid, cwd=cwd, env=env or {})
        return ShellSession(self, sid)

    def spawn(self, argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None) -> str:
        """Start a long-running process with piped stdio; returns its key for ``recv_line`` and ``kill``."""
        key = self._new_id("proc")
        self._request("spawn", 30.0, key=key, argv=list(argv), cwd=cwd, env=env or {})
        return key

    def recv_line(
        self, key: str, *, timeout: float, send: bytes | None = None, max_bytes: int = 16 << 20,
    ) -> tuple[bytes | None, bool, bytes]:
        """Send ``send`` (if any), then one line of the process's stdout, in one round trip.

        Returns ``(line or None on timeout, eof, stderr tail when eof)``.
        """
        answer = self._request(
            "recv", timeout + GRACE_S, key=key, timeout=timeout, max_bytes=max_bytes, data=_b64(send),
        )
        with self._untrusted():
            line = answer.get("line")
            stderr = base64.b64decode(answer.get("stderr") or "")
            return (None if line is None else base64.b64decode(line)), bool(answer["eof"]), stderr

    def kill(self, key: str) -> None:
        self._request("kill", 30.0, key=key)

    def processes(self) -> list[int]:
        """PIDs of every process in the sandbox (as the sandbox sees them; the supervisor is one of them)."""
        answer = self._request("ps", 30.0)
        with self._untrusted():
            return [int(pid) for pid in answer["pids"]]

    def kill_processes(self) -> None:
        """Kill every process in the sandbox except its supervisor (shell sessions and spawned ones too)."""
        self._request("killall", 30.0)

    @property
    def alive(self) -> bool:
        return self._channel is not None and not self._closed

    # ----------------------------------------------------------------- plumbing
    def _request(self, op: str, wait: float, **fields: Any) -> dict[str, Any]:
        with self._lock:
            self._ensure_open()
            if not self._owned():
                raise SandboxError(
                    f"this {self.backend} sandbox belongs to process {self._owner_pid}, not to this forked child "
                    f"({os.getpid()}); make sandboxes in the process that uses them")
            if self._channel is None:
                raise SandboxDied(f"the {self.backend} sandbox is broken; call reset() to get a fresh one")
            try:
                return self._channel.request(op, wait, **fields)
            except SandboxDied:
                self._stop_channel()
                raise

    @contextmanager
    def _untrusted(self) -> Iterator[None]:
        """Decoding an answer: it came from inside the sandbox, so a malformed one ends this supervisor."""
        try:
            yield
        except (KeyError, TypeError, ValueError) as e:
            with self._lock:
                self._stop_channel()
            raise SandboxDied(f"the {self.backend} supervisor sent a malformed answer ({type(e).__name__}: {e})") from e

    def _stop_channel(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()
        self._terminate()

    def _owned(self) -> bool:
        return os.getpid() == self._owner_pid

    def _ensure_open(self) -> None:
        if self._closed:
            raise SandboxError(f"this {self.backend} sandbox is closed")

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            self._next_id += 1
            return f"{prefix}-{self._next_id}"

    @staticmethod
    def _check_path(path: str) -> None:
        if not isinstance(path, str) or not path or "\0" in path:
            raise ValueError(f"path must be a non-empty string without NUL bytes, got {path!r:.80}")


class ShellSession:
    """A persistent bash in a sandbox: cwd, variables, functions and files carry over between commands.

    Each command is sent down the live shell's stdin (no new process per command: that is what keeps a
    round trip under a millisecond). Its stdin is /dev/null. A command that outlives ``timeout`` has the
    processes it started killed; if the shell itself is stuck (a shell-level loop) or exits (``exit``,
    ``exec``, ``kill -9 $$``), a new shell starts in the last known cwd and ``ShellResult.restarted`` says
    why (variables are then lost; files are not).
    """

    def __init__(self, sandbox: SupervisedSandbox, sid: str):
        self.sandbox, self.sid = sandbox, sid

    def run(self, command: str, *, timeout: float) -> ShellResult:
        timeout = _check_timeout(timeout)
        if not isinstance(command, str):
            raise ValueError(f"command must be a string, got {type(command).__name__}")
        ooms = self.sandbox._oom_kills()
        answer = self.sandbox._request(
            "shell", timeout + GRACE_S, sid=self.sid, command=command, timeout=timeout,
            max_output=self.sandbox.limits.output_bytes,
        )
        with self.sandbox._untrusted():
            stdout, out_dropped = _stream(answer, "stdout")
            stderr, err_dropped = _stream(answer, "stderr")
            restarted = answer.get("restarted")
            code, timed_out = int(answer["exit_code"]), bool(answer["timed_out"])
            stderr += self.sandbox._oom_note(ooms, code, timed_out)
            return ShellResult(stdout, stderr, code, str(answer["cwd"]), timed_out, float(answer["duration_s"]),
                               out_dropped + err_dropped, None if restarted is None else str(restarted))
