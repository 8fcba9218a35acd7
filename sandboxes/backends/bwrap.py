"""Bubblewrap backend: Linux namespaces around the supervisor, no daemon, ~15 ms to start.

What the sandbox sees: the shared Debian root filesystem (or the host's ``/usr`` and ``/etc``) read-only,
a fresh ``/proc`` showing only its own processes, a minimal read-only ``/dev``, no network (a new network
namespace with nothing in it, so not even the host's loopback), no nested user namespaces, and the writable
directories of :class:`~sandboxes.base.Limits` as size-capped tmpfs mounts that vanish with the sandbox. The supervisor
is PID 1 (``--as-pid-1``); bwrap's ``--die-with-parent`` takes the sandbox down if the host process dies.

``reset`` is in place (kill every process, empty the tmpfs mounts): the root is read-only, so that is the
pristine state, in a few milliseconds rather than a new sandbox.

Limits are rlimits set by the supervisor on every process (CPU time, address space, file size, open
files) plus RLIMIT_NPROC, which the kernel counts per user namespace, so one sandbox's fork bomb cannot
starve another's. Because the kernel exempts the host's root from RLIMIT_NPROC, a root host runs bwrap
as an unprivileged user (``run_as``, default 65534, "nobody").
"""

from __future__ import annotations

import os
import subprocess
import sys
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from ..base import Limits, SandboxDied, SandboxUnavailable
from ..channel import Channel, PipeTransport
from ..image import bwrap_problem, rootfs
from ..supervised import BASE_ENV, SANDBOX_GID, SANDBOX_UID, SupervisedSandbox, supervisor_args

HOST_SYSTEM_DIRS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ROOTFS_DIRS = ("usr", "etc", "var", "opt", "srv", "home")
SHM_BYTES = 16 << 20


#: The one thread that forks bwrap (see ``_launch``); its worker lives as long as the process.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bwrap-spawner")


class BwrapSandbox(SupervisedSandbox):
    """A bubblewrap sandbox; see the module docstring for what it isolates and how."""

    backend: ClassVar[str] = "bwrap"
    in_place_reset = True

    def __init__(
        self, limits: Limits | None = None, *, root: str | Path | None = None, run_as: int = 65534, **overrides: Any,
    ):
        problem = bwrap_problem()
        if problem:
            raise SandboxUnavailable(problem)
        self._root = Path(root) if root is not None else rootfs()
        self._run_as = run_as
        self._proc: subprocess.Popen | None = None
        super().__init__(limits, **overrides)

    def _launch(self) -> Channel:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        drop = {"user": self._run_as, "group": self._run_as, "extra_groups": []} if os.getuid() == 0 else {}
        try:
            # --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that forked bwrap exits,
            # so sandboxes are always spawned from one long-lived thread (a short-lived caller thread, such
            # as a pool user's, would take its sandbox down with it).
            proc = _SPAWNER.submit(
                subprocess.Popen, self._argv(), stdin=stdin_r, stdout=stdout_w, stderr=subprocess.PIPE,
                env=BASE_ENV, close_fds=True, start_new_session=True, **drop,
            ).result()
        finally:
            os.close(stdin_r)
            os.close(stdout_w)
        self._proc = proc
        self._finalizer = weakref.finalize(self, _kill, proc)
        channel = Channel(PipeTransport(stdin_w, stdout_r), "bwrap sandbox")
        try:
            channel.hello(timeout=20.0)
        except SandboxDied as e:
            channel.close()
            raise SandboxDied(f"{e}; bwrap said: {_stderr_tail(proc)}") from e
        return channel

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _kill(proc)

    def _argv(self) -> list[str]:
        mb = 1 << 20
        argv = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--as-pid-1", "--hostname", "sandbox"]
        argv += self._root_layout()
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(SHM_BYTES), "--perms", "1777", "--tmpfs", "/dev/shm",
                 "--remount-ro", "/dev"]
        for path in self.limits.writable:
            perms = "1777" if path == "/tmp" else "0755"
            argv += ["--size", str(self.limits.disk_mb * mb), "--perms", perms, "--tmpfs", path]
        argv += ["--remount-ro", "/", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
        argv += ["--chdir", self.limits.workdir]
        python = "/usr/bin/python3" if self._root is not None or not sys.executable else _host_python()
        config = self._supervisor_config(uid=None, nproc=True)
        return argv + ["--", python, *supervisor_args(self._root or Path("/")), config]

    def _root_layout(self) -> list[str]:
        """A tmpfs ``/`` with the system directories bound read-only into it (mount points can then be made)."""
        args: list[str] = []
        source = self._root or Path("/")
        names = ROOTFS_DIRS if self._root is not None else HOST_SYSTEM_DIRS
        entries = (p for p in source.iterdir() if p.name in names or (self._root is not None and p.is_symlink()))
        for entry in sorted(entries):
            if entry.is_symlink():
                args += ["--symlink", os.readlink(entry), f"/{entry.name}"]
            elif entry.is_dir():
                args += ["--ro-bind", str(entry), f"/{entry.name}"]
        return args


def _host_python() -> str:
    """Without the rootfs the supervisor runs on the host's system Python (it needs only the stdlib)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate):
            return candidate
    raise SandboxUnavailable("no system python3 under /usr for the sandbox supervisor; build the rootfs instead")


def _kill(proc: subprocess.Popen) -> None:
    """Kill bwrap; its PID 1 (the supervisor) dies with it, and the kernel then kills the whole namespace."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    if proc.stderr is not None:
        proc.stderr.close()


def _stderr_tail(proc: subprocess.Popen) -> str:
    try:
        proc.wait(timeout=2)
        return (proc.stderr.read() if proc.stderr else b"").decode(errors="replace")[-500:].strip() or "(nothing)"
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return "(no message)"
