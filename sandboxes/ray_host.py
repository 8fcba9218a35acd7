"""Sandboxes on Ray: one host actor per node wraps that node's :class:`SandboxPool`; clients hold proxies.

A sandbox is a set of kernel namespaces and a supervisor process on one machine, so it never moves: the
host actor named ``agentgym-sandbox-host:<node id>`` (namespace ``agentgym``) is pinned to its node
(hard node affinity, ``num_cpus=0``, threaded so many clients' commands run at once) and owns every
sandbox of that node. A client anywhere in the cluster — an env actor, a generated env, the driver — holds
a :class:`~sandboxes.ray_client.RemoteSandbox`, which speaks the :class:`~sandboxes.base.Sandbox` protocol (plus shells and
spawned processes, so terminal envs and :class:`~sandboxes.runner.PythonRunner` work unchanged) by one
Ray call per operation.

Where sandboxes start (``node``): ``"local"`` — the node the caller runs on (no network hop); ``"any"`` —
the alive node whose host holds the fewest sandboxes; or a node id (hex). ``sandboxes.make(backend,
ray_node=...)`` returns a proxy, and so does every ``make`` in a process whose ``AGENTGYM_SANDBOX_RAY_NODE``
is set — that is how terminal envs (``ray_node=`` is one of their backend options) and generated envs
(meta-envs, which call ``sandboxes.make``) run their sandboxes on other nodes without code of their own.

Failure semantics (the sandbox contract, unchanged): what the supervisor answered comes back as the
backend's own result or exception (``SandboxError``, ``ValueError``). Our machinery failing — the host
actor or its node died, or the host did not answer within the operation's own deadline plus
:data:`RPC_MARGIN_S` — is :class:`~sandboxes.base.SandboxDied`, which terminal envs already report as
``infra_error``; ``reset()`` then opens a fresh sandbox (on a new host if the old one is gone). Ray
never retries a call (``max_task_retries=0``: a command is not idempotent) nor restarts a host
(``max_restarts=0``: a restarted actor would have lost its sandboxes). A client actor that dies (SIGKILL,
its node lost) loses its sandboxes to the pool within seconds (the host pings the owners of its leases);
any other client that vanishes without ``close()`` after ``lease_s`` without a call (reset, then reused).
Hosts are detached actors, so they outlive the job that made them; :func:`shutdown_hosts` stops them.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .base import Limits, SandboxDied, SandboxError, SandboxUnavailable
from .pool import SandboxPool
from .supervised import GRACE_S as _SUPERVISOR_GRACE_S
from .supervised import ShellSession, SupervisedSandbox

NAMESPACE = "agentgym"
HOST_PREFIX = "agentgym-sandbox-host:"
NODE_ENV = "AGENTGYM_SANDBOX_RAY_NODE"
"""When set (``local``, ``any`` or a node id), every ``sandboxes.make`` in the process returns a proxy."""
GRACE_S = _SUPERVISOR_GRACE_S
"""Beyond a command's own timeout: what the supervisor itself may take to kill it and drain its pipes."""
RPC_MARGIN_S = 30.0
"""Beyond an operation's own deadline: the Ray round trip, and the host starting a sandbox on first use."""
OPEN_TIMEOUT_S = 120.0
STATS_TIMEOUT_S = 10.0
RELEASE_TIMEOUT_S = 5.0
OWNER_CHECK_S = 5.0
"""How often a host checks that the actors holding its sandboxes are alive (a dead one's go back to the pool)."""
"""How long ``node="any"`` waits for the hosts' loads (a host that has not answered by then is passed over)."""
_OPS = frozenset({"run", "write_file", "read_file", "reset", "processes", "kill_processes", "spawn", "recv_line",
                  "kill", "open_shell", "shell"})


@dataclass
class _Lease:
    box: SupervisedSandbox
    pool: SandboxPool
    owner: Any = None
    """The handle of the actor that leased it (``None``: a driver), watched so its death frees the sandbox."""
    used: float = field(default_factory=time.monotonic)
    ping: Any = None


class SandboxHost:
    """The per-node host (run as a Ray actor by :func:`host_on`): pools by configuration, leases by handle."""

    def __init__(self, *, pool_size: int = 64, lease_s: float = 1800.0):
        os.environ.pop(NODE_ENV, None)  # the host makes real sandboxes, never proxies to itself
        self.pool_size, self.lease_s = int(pool_size), float(lease_s)
        self._pools: dict[str, SandboxPool] = {}
        self._leases: dict[str, _Lease] = {}
        self._lock = threading.Lock()
        self._reaper = threading.Thread(target=self._reap_forever, name="sandbox-host-reaper", daemon=True)
        self._reaper.start()

    def open(self, backend: str, limits: Limits | None, options: dict[str, Any], timeout: float,
             owner: Any = None) -> dict[str, Any]:
        """Acquire a pristine sandbox of this configuration; the answer carries its handle and limits."""
        try:
            pool = self._pool(backend, limits, options)
            box = pool.acquire(timeout)
        except Exception as e:  # noqa: BLE001 - sent back as data; the client raises our own types
            return _error(e)
        handle = uuid.uuid4().hex
        with self._lock:
            self._leases[handle] = _Lease(box, pool, owner)
        return {"handle": handle, "limits": box.limits, "node_id": _node_id()}

    def call(self, handle: str, op: str, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Run one operation on a leased sandbox; the outcome (value or exception) comes back as data."""
        with self._lock:
            lease = self._leases.get(handle)
            if lease is not None:
                lease.used = time.monotonic()
        if lease is None:
            return {"error": "died", "message": f"no sandbox {handle} on this host (released, or its lease of "
                                                f"{self.lease_s:.0f} s without a call ran out)"}
        if op not in _OPS:
            return {"error": "value", "message": f"expected one of {sorted(_OPS)}, got operation {op!r:.80}"}
        try:
            return {"ok": _perform(lease.box, op, args, kwargs)}
        except Exception as e:  # noqa: BLE001 - see open()
            return _error(e)

    def release(self, handle: str) -> None:
        """Hand a sandbox back to its pool (reset in the background before reuse)."""
        with self._lock:
            lease = self._leases.pop(handle, None)
        if lease is not None:
            lease.pool.release(lease.box)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"node_id": _node_id(), "pid": os.getpid(), "leased": len(self._leases),
                    "idle": sum(pool.idle for pool in self._pools.values())}

    def shutdown(self) -> None:
        """Close every sandbox of this host (leased ones too) before the actor is killed."""
        with self._lock:
            pools, self._pools, self._leases = list(self._pools.values()), {}, {}
        for pool in pools:
            pool.close()

    def _pool(self, backend: str, limits: Limits | None, options: dict[str, Any]) -> SandboxPool:
        key = repr((backend, limits, sorted(options.items())))
        with self._lock:
            if key not in self._pools:
                self._pools[key] = SandboxPool(backend, self.pool_size, limits=limits, warm=0, **options)
            return self._pools[key]

    def _reap_forever(self) -> None:
        while True:
            time.sleep(min(OWNER_CHECK_S, max(0.1, self.lease_s / 4)))
            cutoff = time.monotonic() - self.lease_s
            with self._lock:
                leases = list(self._leases.items())
            for handle, lease in leases:
                if lease.used < cutoff or _owner_died(lease):
                    self.release(handle)


def _owner_died(lease: _Lease) -> bool:
    """Whether the actor that leased the sandbox is dead (SIGKILLed, its node lost): it will never close it.

    A ping is sent and read on a later round, so an owner busy with a long step is never waited for."""
    if lease.owner is None:
        return False
    ray = _ray()
    if lease.ping is None:
        lease.ping = lease.owner.__ray_ready__.remote()
        return False
    ready, _ = ray.wait([lease.ping], timeout=0)
    if not ready:
        return False
    lease.ping = None
    try:
        ray.get(ready[0])
    except ray.exceptions.RayActorError:
        return True
    except ray.exceptions.RayError:
        return False
    return False


def _perform(box: SupervisedSandbox, op: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    if op == "open_shell":
        return box.open_shell(**kwargs).sid
    if op == "shell":
        sid, command = args
        return ShellSession(box, sid).run(command, **kwargs)
    return getattr(box, op)(*args, **kwargs)


def _error(e: Exception) -> dict[str, Any]:
    kinds = ((SandboxDied, "died"), (SandboxUnavailable, "unavailable"), (SandboxError, "sandbox"),
             (TimeoutError, "busy"), ((ValueError, TypeError), "value"))
    kind = next((name for types, name in kinds if isinstance(e, types)), "died")
    return {"error": kind, "message": f"{type(e).__name__}: {e}"}


_RAISE = {"died": SandboxDied, "unavailable": SandboxUnavailable, "sandbox": SandboxError, "busy": SandboxError,
          "value": ValueError}


def _node_id() -> str:
    return _ray().get_runtime_context().get_node_id()


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise SandboxUnavailable("sandboxes on Ray need Ray: pip install 'agentgym[ray]'") from e
    return ray


# ----------------------------------------------------------------- finding hosts
def host_on(node_id: str, *, pool_size: int = 64, lease_s: float = 1800.0, max_concurrency: int = 256) -> Any:
    """The sandbox host actor of ``node_id``, started there if it is not running (idempotent, race-free)."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor = _host_class().options(
        name=HOST_PREFIX + node_id, namespace=NAMESPACE, get_if_exists=True, lifetime="detached", num_cpus=0,
        max_concurrency=max_concurrency, max_restarts=0, max_task_retries=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    )
    return actor.remote(pool_size=pool_size, lease_s=lease_s)


@functools.cache
def _host_class() -> Any:
    return _ray().remote(SandboxHost)


def alive_nodes() -> list[str]:
    """Ids of the cluster's alive nodes, sorted (so choices among equals are deterministic)."""
    return sorted(node["NodeID"] for node in _ray().nodes() if node.get("Alive"))


def choose_node(node: str) -> str:
    """The node id that ``node`` (``local``, ``any`` or an id) names; ``any`` is the least-leased alive node."""
    ray = _ray()
    if not ray.is_initialized():
        raise SandboxUnavailable("Ray is not initialised in this process: call "
                                 "agentgym_envs.vector.ray_cluster.init_ray(address) before making Ray sandboxes")
    if node == "local":
        return ray.get_runtime_context().get_node_id()
    nodes = alive_nodes()
    if node != "any":
        if node not in nodes:
            raise SandboxUnavailable(f"expected an alive node id, 'local' or 'any', got {node!r:.80} "
                                     f"(alive: {', '.join(nodes) or 'none'})")
        return node
    asked = {host_on(node_id).stats.remote(): node_id for node_id in nodes}  # all at once: one round trip
    answered, _ = ray.wait(list(asked), num_returns=len(asked), timeout=STATS_TIMEOUT_S)
    loads = []
    for ref in answered:
        try:
            loads.append((ray.get(ref)["leased"], asked[ref]))
        except ray.exceptions.RayError:
            continue  # a node going away while we look: choose among the others
    if not loads:
        raise SandboxUnavailable(f"no sandbox host answered on any of the {len(nodes)} alive nodes")
    return min(loads)[1]


def shutdown_hosts() -> int:
    """Close the sandboxes of every host in the cluster and stop the hosts; returns how many were stopped."""
    ray = _ray()
    stopped = 0
    for node_id in alive_nodes():
        try:
            host = ray.get_actor(HOST_PREFIX + node_id, namespace=NAMESPACE)
        except ValueError:
            continue
        try:
            ray.get(host.shutdown.remote(), timeout=OPEN_TIMEOUT_S)
        except ray.exceptions.RayError:
            pass
        ray.kill(host)
        stopped += 1
    return stopped
