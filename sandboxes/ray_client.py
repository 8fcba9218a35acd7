"""The client side of sandboxes on Ray: :class:`RemoteSandbox`, a proxy for a sandbox on a node's host actor.

It speaks the :class:`~sandboxes.base.Sandbox` protocol, plus shells and spawned processes, by one Ray call
per operation (see :mod:`sandboxes.ray_host` for where sandboxes start and what each failure means).
``sandboxes.make(backend, ray_node=...)`` returns one.
"""

from __future__ import annotations

import threading
from typing import Any, Self

from . import ray_host
from .base import ExecResult, Limits, SandboxDied, SandboxError, ShellResult
from .ray_host import _RAISE, OPEN_TIMEOUT_S, RELEASE_TIMEOUT_S, _ray, choose_node, host_on


class RemoteShell:
    """A live shell session in a :class:`RemoteSandbox` (see :class:`~sandboxes.supervised.ShellSession`)."""

    def __init__(self, sandbox: RemoteSandbox, sid: str):
        self.sandbox, self.sid = sandbox, sid

    def run(self, command: str, *, timeout: float) -> ShellResult:
        return self.sandbox._call("shell", (self.sid, command), {"timeout": timeout}, wait=_wait(timeout))


class RemoteSandbox:
    """A sandbox on a node's host actor, driven from anywhere in the cluster (see the module docstring)."""

    def __init__(self, backend: str = "bwrap", limits: Limits | None = None, *, node: str = "local",
                 **options: Any):
        self.backend, self.node = backend, node
        self._requested, self._options = limits, options
        self._lock = threading.RLock()
        self._closed = False
        self._host: Any = None
        self._handle: str | None = None
        self.node_id: str | None = None
        self.limits = limits or Limits()
        self._open()

    # ----------------------------------------------------------------- the protocol
    def run(self, command: str | list[str], *, timeout: float, stdin: bytes | None = None,
            cwd: str | None = None, env: dict[str, str] | None = None) -> ExecResult:
        return self._call("run", (command,), {"timeout": timeout, "stdin": stdin, "cwd": cwd, "env": env},
                          wait=_wait(timeout))

    def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        self._call("write_file", (path, data), {"mode": mode}, wait=60.0)

    def read_file(self, path: str, *, max_bytes: int = 32 << 20) -> bytes:
        return self._call("read_file", (path,), {"max_bytes": max_bytes}, wait=60.0)

    def reset(self) -> None:
        """Back to pristine: reset on its host, or a fresh sandbox when the host (or its node) is gone."""
        with self._lock:
            self._ensure_open()
            if self._handle is not None:
                try:
                    self._call("reset", (), {}, wait=90.0)
                    return
                except SandboxDied:
                    pass
            self._release()
            self._open()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open_shell(self, *, cwd: str | None = None, env: dict[str, str] | None = None) -> RemoteShell:
        return RemoteShell(self, self._call("open_shell", (), {"cwd": cwd, "env": env}, wait=30.0))

    def spawn(self, argv: list[str], *, cwd: str | None = None, env: dict[str, str] | None = None) -> str:
        return self._call("spawn", (argv,), {"cwd": cwd, "env": env}, wait=30.0)

    def recv_line(self, key: str, *, timeout: float, send: bytes | None = None,
                  max_bytes: int = 16 << 20) -> tuple[bytes | None, bool, bytes]:
        return self._call("recv_line", (key,), {"timeout": timeout, "send": send, "max_bytes": max_bytes},
                          wait=_wait(timeout))

    def kill(self, key: str) -> None:
        self._call("kill", (key,), {}, wait=30.0)

    def processes(self) -> list[int]:
        return self._call("processes", (), {}, wait=30.0)

    def kill_processes(self) -> None:
        self._call("kill_processes", (), {}, wait=30.0)

    @property
    def alive(self) -> bool:
        return self._handle is not None and not self._closed

    # ----------------------------------------------------------------- plumbing
    def _open(self) -> None:
        ray = _ray()
        node_id = choose_node(self.node)
        host = host_on(node_id)
        try:
            answer = ray.get(host.open.remote(self.backend, self._requested, self._options, OPEN_TIMEOUT_S,
                                              _current_actor(ray)), timeout=OPEN_TIMEOUT_S + ray_host.RPC_MARGIN_S)
        except ray.exceptions.RayError as e:
            raise SandboxDied(f"the sandbox host on node {node_id} failed to open a sandbox ({type(e).__name__}: "
                              f"{e}); reset() tries again") from e
        if "error" in answer:
            raise _RAISE.get(answer["error"], SandboxDied)(f"on node {node_id}: {answer['message']}")
        self._host, self._handle, self.node_id, self.limits = host, answer["handle"], node_id, answer["limits"]

    def _call(self, op: str, args: tuple, kwargs: dict[str, Any], *, wait: float) -> Any:
        ray = _ray()
        with self._lock:
            self._ensure_open()
            if self._handle is None:
                raise SandboxDied(f"this Ray {self.backend} sandbox is broken; call reset() to get a fresh one")
            host, handle = self._host, self._handle
        ref = host.call.remote(handle, op, args, kwargs)
        try:
            answer = ray.get(ref, timeout=wait + ray_host.RPC_MARGIN_S)
        except ray.exceptions.GetTimeoutError as e:
            _cancel(ray, ref)  # a queued call must not run later, on a sandbox this client gave up
            self._abandon()
            raise SandboxDied(f"the sandbox host on node {self.node_id} did not answer {op} within "
                              f"{wait + ray_host.RPC_MARGIN_S:.0f} s; reset() starts a fresh sandbox") from e
        except ray.exceptions.RayError as e:
            self._abandon()
            raise SandboxDied(f"the sandbox host on node {self.node_id} is gone ({type(e).__name__}); reset() "
                              "starts a fresh sandbox") from e
        if "error" in answer:
            raise _RAISE.get(answer["error"], SandboxDied)(answer["message"])
        return answer["ok"]

    def _abandon(self) -> None:
        with self._lock:
            self._release()

    def _release(self) -> None:
        host, handle, self._host, self._handle = self._host, self._handle, None, None
        if host is not None and handle is not None:
            try:  # awaited (briefly): an env actor killed right after close() would drop an unsent call
                _ray().get(host.release.remote(handle), timeout=RELEASE_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - a dead host, or Ray already shut down here: nothing to hand back
                pass

    def _ensure_open(self) -> None:
        if self._closed:
            raise SandboxError(f"this Ray {self.backend} sandbox is closed")


def _current_actor(ray: Any) -> Any:
    """This process's actor handle (an env actor), or ``None`` in a driver."""
    try:
        return ray.get_runtime_context().current_actor
    except RuntimeError:
        return None


def _cancel(ray: Any, ref: Any) -> None:
    try:
        ray.cancel(ref)
    except Exception:  # noqa: BLE001 - best effort: the lease is released right after anyway
        pass


def _wait(timeout: Any) -> float:
    """How long the host may take for an operation with ``timeout`` (a bad value is refused by the host)."""
    return float(timeout) + ray_host.GRACE_S if isinstance(timeout, (int, float)) and 0 < timeout < 1e6 else 60.0
