"""Isolated execution of untrusted commands and code (``docs/architecture.md``, Sandboxes).

>>> import sandboxes
>>> with sandboxes.make("bwrap", memory_mb=512) as box:
...     box.write_file("hello.py", b"print('hi')")
...     box.run("python3 hello.py", timeout=10).stdout
b'hi\\n'

Backends (each a :class:`Sandbox`): ``"bwrap"`` (bubblewrap namespaces, the default on Linux),
``"docker"`` (a container through the Docker SDK) and ``"unsafe"`` (a plain host process, trusted
debugging only). All run the same in-sandbox supervisor, which is what makes a live shell session
(:meth:`~sandboxes.supervised.SupervisedSandbox.open_shell`) answer in well under a millisecond.
:class:`SandboxPool` keeps sandboxes warm; :class:`PythonRunner` drives untrusted Python inside one over
JSON lines. ``scripts/setup_sandboxes.sh`` installs what the real backends need.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from . import image as _image
from .base import ExecResult, Limits, Sandbox, SandboxDied, SandboxError, SandboxUnavailable, ShellResult
from .image import bwrap_problem, docker_problem
from .pool import SandboxPool
from .runner import PythonRunner, RunnerError
from .supervised import ShellSession, SupervisedSandbox

def _fresh_docker_client_after_fork() -> None:
    """A forked child must not share the parent's Docker connection (answers would go to either process)."""
    _image._client = None
    _image._client_lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_docker_client_after_fork)

BACKENDS = ("bwrap", "docker", "unsafe")
REAL_BACKENDS = ("bwrap", "docker")


def make(backend: str = "bwrap", limits: Limits | None = None, *, ray_node: str | None = None,
         **options: Any) -> SupervisedSandbox:
    """Start a sandbox. ``options`` are :class:`Limits` fields or backend options (``image=`` for Docker).

    ``ray_node`` (``"local"``, ``"any"`` or a node id; default ``$AGENTGYM_SANDBOX_RAY_NODE``) starts it on
    that node's sandbox host actor instead and returns a proxy (:mod:`sandboxes.ray_host`).
    Raises :class:`SandboxUnavailable` (with the remedy) when the backend cannot run on this machine.
    """
    ray_node = ray_node or os.environ.get("AGENTGYM_SANDBOX_RAY_NODE") or None
    if ray_node is not None:
        from .ray_client import RemoteSandbox

        return RemoteSandbox(backend, limits, node=ray_node, **options)  # type: ignore[return-value]
    if backend == "bwrap":
        from .backends.bwrap import BwrapSandbox

        return BwrapSandbox(limits, **options)
    if backend == "docker":
        from .backends.docker import DockerSandbox

        return DockerSandbox(limits, **options)
    if backend == "unsafe":
        from .backends.unsafe import UnsafeLocalSandbox

        return UnsafeLocalSandbox(limits, **options)
    raise ValueError(f"backend must be one of {BACKENDS} (unsafe only for trusted code), got {backend!r}")


def unavailable_reason(backend: str) -> str | None:
    """Why ``backend`` cannot run here (with the fix), or ``None`` when it can."""
    if backend == "bwrap":
        return bwrap_problem()
    if backend == "docker":
        return docker_problem()
    if backend == "unsafe":
        return None
    raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")


__all__ = [
    "BACKENDS",
    "REAL_BACKENDS",
    "ExecResult",
    "Limits",
    "PythonRunner",
    "RunnerError",
    "Sandbox",
    "SandboxDied",
    "SandboxError",
    "SandboxPool",
    "SandboxUnavailable",
    "ShellResult",
    "ShellSession",
    "SupervisedSandbox",
    "make",
    "unavailable_reason",
]
