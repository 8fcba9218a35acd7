"""Whole-sandbox memory, CPU and process limits through a cgroup the host creates per sandbox.

Why: rlimits are per process, so six processes of 700 MB each under ``memory_mb=1024`` take 4.2 GB.
A cgroup bounds the sum: memory (RAM-backed files in the sandbox's tmpfs mounts included, as Docker
counts them; swap excluded), CPU bandwidth (``Limits.cpus``) and the number of processes and threads.
When the sum would pass ``Limits.sandbox_memory_mb`` (``memory_mb``, unless the tmpfs mounts could
hold more: see there), the kernel's OOM killer kills a process of that sandbox only —
sandboxed commands run with ``oom_score_adj`` 1000, so it picks one of them before the supervisor — and
:meth:`SandboxCgroup.oom_kills` lets the host say so in the command's result.

Both cgroup versions are supported: v1 (one directory per controller, ``/sys/fs/cgroup/memory/...``),
which this project's machines run, and v2 (one unified directory). :func:`detect` picks the hierarchy
that holds the memory controller. Creating cgroups needs root (or a delegated v2 subtree); where that is
impossible :class:`SandboxCgroup` raises :class:`~sandboxes.base.SandboxUnavailable` with the remedy.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from .base import Limits, SandboxUnavailable

CONTROLLERS = ("memory", "pids", "cpu")
GROUP = "agentgym-sandboxes"
CPU_PERIOD_US = 100_000
EXTRA_PIDS = 2  # the supervisor and bwrap's own process, beyond Limits.processes
_counter = itertools.count(1)


@dataclass(frozen=True)
class Hierarchy:
    """Where the cgroups of each controller live: ``version`` 1 (a mount per controller) or 2 (one mount)."""

    version: int
    parents: dict[str, Path]
    """controller -> the directory new sandbox cgroups are made in (the same for every controller on v2)."""


def detect(mounts: str | None = None, self_cgroup: str | None = None) -> Hierarchy | None:
    """The hierarchy holding the memory controller (v1 preferred when a v1 mount has it), or ``None``."""
    mounts = Path("/proc/self/mounts").read_text() if mounts is None else mounts
    self_cgroup = Path("/proc/self/cgroup").read_text() if self_cgroup is None else self_cgroup
    v1: dict[str, Path] = {}
    v2: Path | None = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        if fields[2] == "cgroup":
            for controller in set(fields[3].split(",")) & set(CONTROLLERS):
                v1[controller] = Path(fields[1])
        elif fields[2] == "cgroup2" and v2 is None:
            v2 = Path(fields[1])
    own = _own_paths(self_cgroup)
    if set(CONTROLLERS) <= set(v1):
        return Hierarchy(1, {c: v1[c] / own.get(c, "").lstrip("/") / GROUP for c in CONTROLLERS})
    if v2 is not None and not v1:
        return Hierarchy(2, dict.fromkeys(CONTROLLERS, v2 / GROUP))
    return None


def _own_paths(self_cgroup: str) -> dict[str, str]:
    """controller -> this process's cgroup path, from ``/proc/self/cgroup`` (v1 lines only)."""
    paths = {}
    for line in self_cgroup.splitlines():
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        for controller in controllers.split(","):
            if controller in CONTROLLERS:
                paths[controller] = path
    return paths


class SandboxCgroup:
    """One sandbox's cgroup, created with its limits; :meth:`adopt` moves the sandbox's processes in."""

    def __init__(self, limits: Limits, hierarchy: Hierarchy | None = None):
        self.hierarchy = hierarchy or detect()
        if self.hierarchy is None:
            raise SandboxUnavailable(
                "no cgroup hierarchy with the memory, pids and cpu controllers is mounted, so the sandbox's "
                "whole memory cannot be bounded; mount cgroups (v1 or v2) or pass whole_sandbox_limits=False")
        name = f"sandbox-{os.getpid()}-{next(_counter)}-{os.urandom(3).hex()}"
        self.dirs = {c: parent / name for c, parent in self.hierarchy.parents.items()}
        try:
            self._create()
            self._write_limits(limits)
        except OSError as e:
            self.remove()
            raise SandboxUnavailable(
                f"cannot create the sandbox's cgroup under {self.hierarchy.parents['memory']} ({e}); run as root "
                "or delegate a cgroup v2 subtree to this user, or pass whole_sandbox_limits=False") from e

    def _create(self) -> None:
        if self.hierarchy.version == 2:
            parent = self.hierarchy.parents["memory"]
            _enable_controllers(parent.parent)
            parent.mkdir(exist_ok=True)
            _enable_controllers(parent)
        for directory in dict.fromkeys(self.dirs.values()):
            directory.parent.mkdir(exist_ok=True)
            directory.mkdir()

    def _write_limits(self, limits: Limits) -> None:
        memory = str(limits.sandbox_memory_mb << 20)
        pids = str(limits.processes + EXTRA_PIDS)
        quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
        if self.hierarchy.version == 1:
            self._write("memory", "memory.limit_in_bytes", memory)
            self._write("memory", "memory.memsw.limit_in_bytes", memory, optional=True)  # no swap either
            self._write("pids", "pids.max", pids)
            self._write("cpu", "cpu.cfs_period_us", str(CPU_PERIOD_US))
            self._write("cpu", "cpu.cfs_quota_us", str(quota))
        else:
            self._write("memory", "memory.max", memory)
            self._write("memory", "memory.swap.max", "0", optional=True)
            self._write("pids", "pids.max", pids)
            self._write("cpu", "cpu.max", f"{quota} {CPU_PERIOD_US}")

    def _write(self, controller: str, name: str, value: str, *, optional: bool = False) -> None:
        path = self.dirs[controller] / name
        if optional and not path.exists():
            return
        path.write_text(value)

    def adopt(self, pids: list[int]) -> None:
        """Move ``pids`` in; their children forked afterwards are born inside."""
        for directory in dict.fromkeys(self.dirs.values()):
            for pid in pids:
                (directory / "cgroup.procs").write_text(str(pid))

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in this cgroup for want of memory so far."""
        name = "memory.oom_control" if self.hierarchy.version == 1 else "memory.events"
        return read_oom_kills(self.dirs["memory"] / name)

    def remove(self) -> None:
        """Kill whatever is left inside and delete the directories (call after the sandbox is stopped)."""
        for directory in dict.fromkeys(self.dirs.values()):
            _remove_dir(directory)


def read_oom_kills(path: Path) -> int:
    """The ``oom_kill`` counter of a v1 ``memory.oom_control`` or v2 ``memory.events`` file (0 if absent)."""
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _enable_controllers(directory: Path) -> None:
    control = directory / "cgroup.subtree_control"
    enabled = set(control.read_text().split())
    missing = [c for c in CONTROLLERS if c not in enabled]
    if missing:
        control.write_text(" ".join(f"+{c}" for c in missing))


def _remove_dir(directory: Path, attempts: int = 50) -> None:
    """rmdir a cgroup, killing stragglers first; the kernel needs a moment after the last process exits."""
    for _ in range(attempts):
        if not directory.exists():
            return
        try:
            for pid in (directory / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
