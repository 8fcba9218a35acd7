"""Bubblewrap backend: Linux namespaces around the supervisor, no daemon, ~15 ms to start.

What the sandbox sees: the shared Debian root filesystem (or the host's ``/usr`` and ``/etc``) read-only,
a fresh ``/proc`` showing only its own processes, a minimal read-only ``/dev``, no network (a new network
namespace with nothing in it, so not even the host's loopback), no nested user namespaces, and the writable
directories of :class:`~sandboxes.base.Limits` as size-capped tmpfs mounts that vanish with the sandbox. The supervisor
is PID 1 (``--as-pid-1``); bwrap's ``--die-with-parent`` takes the sandbox down if the host process dies.

``reset`` is in place (kill every process, empty the tmpfs mounts): the root is read-only, so that is the
pristine state, in a few milliseconds rather than a new sandbox.

Limits are of two kinds. Per process, rlimits set by the supervisor (CPU time, address space, file
size, open files) plus RLIMIT_NPROC, which the kernel counts per user namespace, so one sandbox's fork
bomb cannot starve another's; because the kernel exempts the host's root from RLIMIT_NPROC, a root host
runs bwrap as an unprivileged user (``run_as``, default 65534, "nobody"). For the whole sandbox, a cgroup
(:mod:`sandboxes.cgroup`) bounds the sum of memory, CPU bandwidth and processes; the supervisor and
everything it starts are moved into it once the supervisor is up (before it has started anything).

System calls pass through the seccomp filter of :mod:`sandboxes.seccomp` (``--seccomp FD``): io_uring,
ptrace, bpf, the mount family and the rest of its list fail with EPERM.

Fork safety: the spawner thread is re-created in a forked child (``os.register_at_fork``), and a sandbox
belongs to the process that made it: a forked child can neither use nor, when it exits, kill its parent's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from .. import seccomp
from ..base import SHM_MB, Limits, SandboxDied, SandboxUnavailable
from ..cgroup import SandboxCgroup
from ..channel import Channel, PipeTransport
from ..image import bwrap_problem, rootfs
from ..supervised import BASE_ENV, SANDBOX_GID, SANDBOX_UID, SupervisedSandbox, supervisor_args

HOST_SYSTEM_DIRS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ROOTFS_DIRS = ("usr", "etc", "var", "opt", "srv", "home")
SHM_BYTES = SHM_MB << 20


#: The one thread that forks bwrap (see ``_launch``); its worker lives as long as the process.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bwrap-spawner")


def _new_spawner_after_fork() -> None:
    """A forked child has the executor but not its thread (threads do not survive fork): start afresh."""
    global _SPAWNER
    _SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bwrap-spawner")


os.register_at_fork(after_in_child=_new_spawner_after_fork)


class BwrapSandbox(SupervisedSandbox):
    """A bubblewrap sandbox; see the module docstring for what it isolates and how."""

    backend: ClassVar[str] = "bwrap"
    in_place_reset = True

    def __init__(
        self, limits: Limits | None = None, *, root: str | Path | None = None, run_as: int = 65534,
        whole_sandbox_limits: bool = True, binds: Sequence[tuple[str, str, bool]] = (), **overrides: Any,
    ):
        """``whole_sandbox_limits=False`` skips the cgroup (per-process limits only) where none can be made.

        ``binds`` are ``(host directory, sandbox directory, writable)`` mounted over the root's directories
        (e.g. a task's prebuilt ``/opt``): read-only ones are part of the pristine state, so the in-place
        reset leaves them alone; a writable one keeps what is written to it across resets (for builds only).
        """
        problem = bwrap_problem()
        if problem:
            raise SandboxUnavailable(problem)
        self._root = Path(root) if root is not None else rootfs()
        self._run_as = run_as
        self._whole_sandbox_limits = whole_sandbox_limits
        self._binds = [(str(host), str(dest), bool(writable)) for host, dest, writable in binds]
        for host, dest, _ in self._binds:
            if not os.path.isdir(host) or not dest.startswith("/") or dest.rstrip("/") in ("", "/proc", "/dev"):
                raise ValueError(f"a bind needs a host directory and an absolute sandbox directory, got {host}:{dest}")
        self._proc: subprocess.Popen | None = None
        self._cgroup: SandboxCgroup | None = None
        super().__init__(limits, **overrides)

    def _launch(self) -> Channel:
        cgroup = SandboxCgroup(self.limits) if self._whole_sandbox_limits else None
        try:
            proc, channel = self._start(cgroup)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        self._proc, self._cgroup = proc, cgroup
        self._finalizer = weakref.finalize(self, _kill, proc, cgroup, os.getpid())
        return channel

    def _start(self, cgroup: SandboxCgroup | None) -> tuple[subprocess.Popen, Channel]:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        filter_r = _seccomp_fd()
        drop = {"user": self._run_as, "group": self._run_as, "extra_groups": []} if os.getuid() == 0 else {}
        try:
            # --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that forked bwrap exits,
            # so sandboxes are always spawned from one long-lived thread (a short-lived caller thread, such
            # as a pool user's, would take its sandbox down with it).
            proc = _SPAWNER.submit(
                subprocess.Popen, self._argv(filter_r), stdin=stdin_r, stdout=stdout_w, stderr=subprocess.PIPE,
                env=BASE_ENV, close_fds=True, pass_fds=(filter_r,), start_new_session=True, **drop,
            ).result()
        finally:
            for fd in (stdin_r, stdout_w, filter_r):
                os.close(fd)
        channel = Channel(PipeTransport(stdin_w, stdout_r), "bwrap sandbox")
        try:
            channel.hello(timeout=20.0)
            if cgroup is not None:  # the supervisor is up and has started nothing yet: all it starts is born inside
                cgroup.adopt(_descendants(proc.pid))
        except BaseException as e:
            channel.close()
            reason = _stderr_tail(proc)
            _kill(proc)
            if isinstance(e, SandboxDied):
                raise SandboxDied(f"{e}; bwrap said: {reason}") from e
            raise
        return proc, channel

    def _terminate(self) -> None:
        proc, cgroup, self._proc, self._cgroup = self._proc, self._cgroup, None, None
        if proc is not None:
            _kill(proc, cgroup)

    def _oom_kills(self) -> int | None:
        return None if self._cgroup is None else self._cgroup.oom_kills()

    def _argv(self, seccomp_fd: int) -> list[str]:
        mb = 1 << 20
        argv = ["bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                "--as-pid-1", "--hostname", "sandbox", "--seccomp", str(seccomp_fd)]
        argv += self._root_layout()
        for host, dest, writable in self._binds:
            argv += ["--bind" if writable else "--ro-bind", host, dest]
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


def _seccomp_fd() -> int:
    """A pipe's read end holding the compiled filter (bwrap reads it to the end, then closes it)."""
    program = seccomp.bpf_program()
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write_fd)
    return read_fd


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (bwrap's child, the supervisor), from /proc's children lists."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").iterdir():
            children = [int(c) for c in (task / "children").read_text().split()]
            found += children
            todo += children
    return found


def _kill(proc: subprocess.Popen, cgroup: SandboxCgroup | None = None, owner: int | None = None) -> None:
    """Kill bwrap; its PID 1 (the supervisor) dies with it, and the kernel then kills the whole namespace.

    Only the process that started the sandbox does this: a forked child's copy of the object (and of its
    finalizer) must not take its parent's sandbox down.
    """
    if owner is not None and owner != os.getpid():
        return
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
    if cgroup is not None:
        cgroup.remove()


def _stderr_tail(proc: subprocess.Popen) -> str:
    try:
        proc.wait(timeout=2)
        return (proc.stderr.read() if proc.stderr else b"").decode(errors="replace")[-500:].strip() or "(nothing)"
    except (subprocess.TimeoutExpired, ValueError, OSError):
        return "(no message)"
