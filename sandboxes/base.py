"""The sandbox contract (``docs/architecture.md``, Sandboxes): results, limits, errors and the ``Sandbox`` protocol.

Every backend runs the same in-sandbox supervisor (:mod:`sandboxes.inside.supervisor`) and differs only in how it
starts it, so results, limits and errors mean the same thing on bubblewrap, Docker and the unsafe backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

TRUNCATION_MARKER = "\n…[{n} bytes truncated]…\n"
SHM_MB = 16  # the size of each sandbox's /dev/shm
SUPERVISOR_RESERVE_MB = 192  # beyond full tmpfs mounts: the supervisor answering a 32 MiB read_file, and a shell


class SandboxError(Exception):
    """The sandbox could not do what was asked (a bad path, a refused image, a dead supervisor)."""


class SandboxUnavailable(SandboxError):
    """A backend cannot run here (tool not installed, engine not running); the message says how to fix it."""


class SandboxDied(SandboxError):
    """The sandbox's supervisor died or stopped answering; ``reset()`` starts a fresh one."""


@dataclass(frozen=True)
class ExecResult:
    """What one command did. Output streams keep their head and tail around a visible truncation marker."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    """The exit status; ``128 + N`` when killed by signal N (the shell's convention)."""
    timed_out: bool
    duration_s: float
    truncated_bytes: int = 0
    """Bytes of stdout and stderr dropped to keep the result within the output bound."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def text(self) -> str:
        """stdout then stderr, decoded (invalid UTF-8 replaced), for display and assertions."""
        return (self.stdout + self.stderr).decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ShellResult:
    """One command through a live shell session (cwd, variables and functions persist between commands)."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    cwd: str
    timed_out: bool
    duration_s: float
    truncated_bytes: int = 0
    restarted: str | None = None
    """Why the shell had to be restarted during this command (it exited, or was stuck past the timeout)."""


@dataclass(frozen=True)
class Limits:
    """Resource bounds of one sandbox. Every field is enforced on every real backend unless noted."""

    cpu_seconds: int = 120
    """CPU time per process (RLIMIT_CPU): bounds busy loops that outlive their wall-clock timeout."""
    memory_mb: int = 1024
    """Memory of the whole sandbox: all its processes together and its RAM-backed files (a cgroup on both
    backends; see :attr:`sandbox_memory_mb` for when files need more), and the address space of each process
    (RLIMIT_AS)."""
    processes: int = 256
    """Processes and threads in the sandbox (a pids cgroup on both backends, plus RLIMIT_NPROC on bubblewrap)."""
    file_size_mb: int = 256
    """Largest file a process may write (RLIMIT_FSIZE)."""
    disk_mb: int = 256
    """Size of each writable tmpfs (the work directory, /tmp, home): filling one stops at this."""
    open_files: int = 1024
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    output_bytes: int = 1 << 20
    """Bound on stdout plus stderr returned per command (head and tail kept, the middle marked)."""
    cpus: float = 1.0
    """CPU bandwidth of the whole sandbox, in CPUs (a cgroup quota on both backends)."""
    writable: tuple[str, ...] = ("/work", "/tmp", "/home/agent")
    """Directories the sandboxed code may write; the first is the default working directory."""

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "memory_mb", "processes", "file_size_mb", "disk_mb", "open_files", "output_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive int, got {value!r}")
        if self.memory_mb < 64:
            raise ValueError(f"Limits.memory_mb must be at least 64 (bash and python need it), got {self.memory_mb}")
        if not self.cpus > 0:
            raise ValueError(f"Limits.cpus must be positive, got {self.cpus!r}")
        if not self.writable or not all(isinstance(p, str) and p.startswith("/") and p != "/" for p in self.writable):
            raise ValueError(f"Limits.writable must be absolute directories other than '/', got {self.writable!r}")

    @property
    def workdir(self) -> str:
        return self.writable[0]

    @property
    def sandbox_memory_mb(self) -> int:
        """The whole-sandbox memory limit: ``memory_mb``, raised when the tmpfs mounts could hold more.

        Files in the writable tmpfs mounts (and /dev/shm) are RAM charged to the sandbox. Were the limit
        below what they can hold plus :data:`SUPERVISOR_RESERVE_MB`, an agent that fills its disks would
        leave no memory for the supervisor, whose death is not the agent's outcome but a dead sandbox.
        """
        tmpfs = len(self.writable) * self.disk_mb + SHM_MB
        return max(self.memory_mb, tmpfs + SUPERVISOR_RESERVE_MB)


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run untrusted commands. Use as a context manager to close it."""

    backend: str

    def run(self, command: str | list[str], *, timeout: float, stdin: bytes | None = None) -> ExecResult:
        """Run a command (a string goes to ``bash -c``) in the work directory; never raises for its failure."""
        ...

    def write_file(self, path: str, data: bytes) -> None:
        """Write a file inside the sandbox (relative paths are under the work directory)."""
        ...

    def read_file(self, path: str) -> bytes:
        """Read a file inside the sandbox."""
        ...

    def reset(self) -> None:
        """Back to the pristine image: files, processes and sessions are gone."""
        ...

    def close(self) -> None:
        """Stop everything; closing twice is fine."""
        ...


def render_stream(head: bytes, tail: bytes, dropped: int) -> bytes:
    """Join a stream's kept head and tail, marking how many bytes were dropped between them."""
    if dropped <= 0:
        return head + tail
    return head + TRUNCATION_MARKER.format(n=dropped).encode() + tail
