"""Docker backend: the supervisor as a container's only process, through the ``docker`` SDK.

The container has no network (``network_mode="none"``), a read-only root filesystem (the pristine image),
the writable directories as size-capped tmpfs mounts, memory/CPU/pids cgroup limits, every capability
dropped except the three the supervisor needs to drop to the sandbox user and to kill its processes
(commands run as uid 1000 with none), ``no-new-privileges`` and the seccomp profile of
:mod:`sandboxes.seccomp` (in place of Docker's default: io_uring, ptrace, bpf, the mount family and the
rest of its list fail with EPERM). The cgroup limits bound the whole container: ``Limits.sandbox_memory_mb`` is the
sum of all its processes and its tmpfs files (no swap), ``processes`` its pids, ``cpus`` its CPU bandwidth;
an OOM kill there is reported in the command's result as on bubblewrap. The host talks to the supervisor over the
container's attached stdin/stdout; ``StdinOnce`` makes the container exit if the host goes away, and
``auto_remove`` then deletes it.

``reset`` is in place: kill every process, empty the tmpfs mounts — with a read-only root that *is* the
pristine image, in milliseconds instead of a new container. Task images that need a writable root
(``writable_root=True``) are reset by replacing the container; such images (Terminal-Bench, Harbor) expect
root, so ``run_as_root=True`` runs commands as the container's root — still without capabilities beyond
the supervisor's three, without network and under the same cgroup limits.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any, ClassVar

from .. import seccomp
from ..base import SHM_MB, Limits, SandboxDied, SandboxUnavailable
from ..cgroup import read_oom_kills
from ..channel import Channel, DockerAttachTransport
from ..image import BASE_IMAGE, CONTAINER_LABEL, docker_client, docker_problem, rootfs
from ..supervised import BASE_ENV, SANDBOX_GID, SANDBOX_UID, SupervisedSandbox, supervisor_args

SUPERVISOR_CAPS = ["SETUID", "SETGID", "KILL"]


class DockerSandbox(SupervisedSandbox):
    """A Docker container sandbox; see the module docstring for what it isolates and how."""

    backend: ClassVar[str] = "docker"

    def __init__(
        self, limits: Limits | None = None, *, image: str = BASE_IMAGE, writable_root: bool = False,
        run_as_root: bool = False, **overrides: Any,
    ):
        problem = docker_problem(image)
        if problem:
            raise SandboxUnavailable(problem)
        self.image, self.writable_root, self.run_as_root = image, writable_root, run_as_root
        self.in_place_reset = not writable_root
        self._client = docker_client()
        self._container_id: str | None = None
        self._oom_file: Path | None = None
        super().__init__(limits, **overrides)

    def _launch(self) -> Channel:
        api = self._client.api
        config = self._supervisor_config(uid=None if self.run_as_root else SANDBOX_UID, nproc=False)
        container = api.create_container(
            self.image, ["python3", *supervisor_args(rootfs() if self.image == BASE_IMAGE else None), config],
            stdin_open=True, detach=False,
            user="0:0", working_dir=self.limits.workdir, environment=BASE_ENV, hostname="sandbox",
            labels={CONTAINER_LABEL: "1"}, host_config=api.create_host_config(**self._host_config()),
        )
        self._container_id = container["Id"]
        weakref.finalize(self, _remove, self._client, self._container_id, os.getpid())
        try:
            sock = api.attach_socket(self._container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            api.start(self._container_id)
            channel = Channel(DockerAttachTransport(sock), f"docker sandbox {self._container_id[:12]}")
            channel.hello(timeout=60.0)
        except Exception as e:
            self._terminate()
            raise SandboxDied(f"the container did not start: {e}") from e
        self._oom_file = _oom_file(api.inspect_container(self._container_id)["State"]["Pid"])
        return channel

    def _oom_kills(self) -> int | None:
        return None if self._oom_file is None else read_oom_kills(self._oom_file)

    def _host_config(self) -> dict[str, Any]:
        mb = self.limits.sandbox_memory_mb
        tmpfs = {}
        for path in self.limits.writable:
            owner = "mode=0755" if self.run_as_root else f"uid={SANDBOX_UID},gid={SANDBOX_GID},mode=0755"
            owner = "mode=1777" if path == "/tmp" else owner
            tmpfs[path] = f"size={self.limits.disk_mb}m,exec,nosuid,nodev,{owner}"  # Docker defaults to noexec
        return {
            "network_mode": "none", "read_only": not self.writable_root, "tmpfs": tmpfs, "mem_limit": f"{mb}m",
            "memswap_limit": f"{mb}m", "nano_cpus": int(self.limits.cpus * 1e9), "pids_limit": self.limits.processes,
            "cap_drop": ["ALL"], "cap_add": SUPERVISOR_CAPS,
            "security_opt": ["no-new-privileges", f"seccomp={seccomp.docker_profile()}"],
            "auto_remove": True, "shm_size": SHM_MB << 20, "ipc_mode": "private", "init": False,
        }

    def _terminate(self) -> None:
        container_id, self._container_id = self._container_id, None
        if container_id is not None:
            _remove(self._client, container_id)


def _oom_file(pid: int) -> Path | None:
    """The memory cgroup file holding the container's OOM-kill counter, found through its first process."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory", path.lstrip("/"), "memory.oom_control")
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return Path("/sys/fs/cgroup", path.lstrip("/"), "memory.events")
    return None


def _remove(client: Any, container_id: str, owner: int | None = None) -> None:
    """Kill and remove a container; already gone is fine. A forked child leaves its parent's alone."""
    if owner is not None and owner != os.getpid():
        return
    try:
        client.api.remove_container(container_id, force=True)
    except Exception:  # NotFound or "removal already in progress" (auto_remove)
        pass
