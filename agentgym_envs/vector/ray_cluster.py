"""Start or join a Ray cluster that keeps to loopback and stays quiet (the extra ``agentgym[ray]``).

Left to its defaults, Ray 2.60 does three things that a test run or a laptop must not:

* it binds and advertises the machine's routable address (found with a UDP ``connect`` to 8.8.8.8), and
  turns a requested ``127.0.0.1`` into that address too. ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is Ray's
  own switch for single-machine clusters (on by default only on Windows and macOS): with it Ray uses
  ``127.0.0.1`` as the node address. It is in :data:`LOOPBACK_ENV`, which :func:`init_ray` applies to a
  local cluster (``address=None``) or a loopback address, never to a real multi-machine cluster. The same
  switch makes ``ray start --address`` refuse to add a node, so a one-machine cluster of several nodes is
  :func:`local_cluster` (``ray.cluster_utils``), not several ``ray start`` processes;
* it reports usage stats: ``RAY_USAGE_STATS_ENABLED=0`` turns the report off, and
  ``RAY_USAGE_STATS_REPORT_URL`` points the one "usage is disabled" notice that a ``ray start`` cluster
  still sends at the loopback discard port, where it fails at once (:data:`QUIET_ENV`, always applied);
* its usage-stats module (loaded in the dashboard process even with the dashboard off) asks the
  cloud-metadata address ``169.254.169.254`` which cloud it runs on, unless ``~/ray_bootstrap_config.yaml``
  names the provider. Ray's head processes are therefore started with ``HOME`` set to a scratch directory
  (:func:`bootstrap_home`) whose bootstrap file says ``provider: {type: local}``; env workers get the
  user's real ``HOME`` back through the job's ``runtime_env``. For ``ray start --head`` by hand:
  ``HOME=$(python -c 'from agentgym_envs.vector.ray_cluster import bootstrap_home; print(bootstrap_home())')``.

The dashboard is off (``include_dashboard=False``); ``RAY_AUTH_MODE=disabled`` is part of the loopback
settings; a cluster across machines needs a shared token instead (docs/scaling.md).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from ..core.errors import AgentGymError

#: The node IP every local cluster uses: nothing listens on, or is advertised at, another address.
LOOPBACK_IP = "127.0.0.1"
#: Environment variables that keep Ray quiet anywhere (set, if unset, in this process by :func:`init_ray`).
QUIET_ENV: dict[str, str] = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_USAGE_STATS_PROMPT_ENABLED": "0",
    "RAY_USAGE_STATS_REPORT_URL": "http://127.0.0.1:9/",
}
#: Environment variables that keep a one-machine cluster on loopback and quiet; :func:`init_ray` and
#: :func:`local_cluster` set them while Ray's processes start (Ray reads them when it is imported there).
LOOPBACK_ENV: dict[str, str] = {**QUIET_ENV, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled"}
_BOOTSTRAP = """\
# Written by agentgym (agentgym_envs/vector/ray_cluster.py). Ray's usage-stats module reads this file to
# learn the cluster's provider; without it, it asks the cloud-metadata address 169.254.169.254.
cluster_name: agentgym-local
provider:
  type: local
"""
_env_lock = threading.Lock()
_home: str | None = None


class RayUnavailableError(AgentGymError):
    """Ray is not installed, or a cluster could not be started or joined."""


def import_ray() -> Any:
    """The ``ray`` module, or :class:`RayUnavailableError` saying how to install it."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    try:
        import ray
    except ImportError as e:
        raise RayUnavailableError(f"expected the `ray` package for Ray mode, got ImportError: {e}; "
                                  "install it with: pip install 'agentgym[ray]'") from e
    return ray


def bootstrap_home() -> str:
    """A scratch ``HOME`` (made once per process) holding a local-provider ``ray_bootstrap_config.yaml``."""
    global _home
    with _env_lock:
        if _home is None or not os.path.isfile(os.path.join(_home, "ray_bootstrap_config.yaml")):
            _home = tempfile.mkdtemp(prefix="agentgym-ray-home-")
            with open(os.path.join(_home, "ray_bootstrap_config.yaml"), "w") as f:
                f.write(_BOOTSTRAP)
        return _home


@contextlib.contextmanager
def ray_process_env(loopback: bool = True) -> Iterator[None]:
    """While Ray starts its head and node processes: :data:`QUIET_ENV` set (kept afterwards, so the driver
    is quiet too), ``HOME`` pointing at :func:`bootstrap_home`, and with ``loopback`` :data:`LOOPBACK_ENV`
    (also in this process's copy of Ray's constants); all but :data:`QUIET_ENV` restored afterwards."""
    ray = import_ray()
    constants = ray._private.ray_constants  # read at import: a driver that imported Ray first needs this too
    changes = {**(LOOPBACK_ENV if loopback else {}), "HOME": bootstrap_home()}
    with _env_lock:
        saved = {key: os.environ.get(key) for key in changes}
        saved_cluster = constants.ENABLE_RAY_CLUSTER
        os.environ.update(changes)
        if loopback:
            constants.ENABLE_RAY_CLUSTER = False
        try:
            yield
        finally:
            constants.ENABLE_RAY_CLUSTER = saved_cluster
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def is_loopback_address(address: str | None) -> bool:
    """``None`` (a new local cluster) or an address on this machine's loopback interface."""
    if address is None or address == "local":
        return True
    host = address.rsplit(":", 1)[0].strip("[]")
    return host in ("127.0.0.1", "localhost", "::1")


def worker_runtime_env(runtime_env: dict[str, Any] | None = None) -> dict[str, Any]:
    """``runtime_env`` with the user's real ``HOME`` for workers (an explicit ``env_vars["HOME"]`` wins)."""
    runtime_env = dict(runtime_env or {})
    env_vars = dict(runtime_env.get("env_vars") or {})
    env_vars.setdefault("HOME", os.path.expanduser("~"))
    runtime_env["env_vars"] = env_vars
    return runtime_env


def init_ray(address: str | None = None, *, num_cpus: int | None = None, **kwargs: Any) -> None:
    """``ray.init`` with the loopback defaults above; does nothing if Ray is already initialised here.

    ``address=None`` starts a local cluster (``num_cpus`` CPUs); ``"auto"`` or ``"HOST:PORT"`` joins a running
    one (then ``num_cpus`` must be ``None``). ``kwargs`` go to ``ray.init`` and override the defaults.
    """
    ray = import_ray()
    if ray.is_initialized():
        return
    if address is not None and num_cpus is not None:
        raise ValueError(f"num_cpus is for a new local cluster; joining address={address!r} expected num_cpus=None, "
                         f"got {num_cpus}")
    loopback = is_loopback_address(address)
    options: dict[str, Any] = {"include_dashboard": False}
    if address is None:
        options["num_cpus"] = num_cpus
    if loopback:  # this machine's processes: the driver on 127.0.0.1, workers with the user's own HOME
        options["_node_ip_address"] = LOOPBACK_IP
    options.update(kwargs)
    if loopback:
        options["runtime_env"] = worker_runtime_env(options.get("runtime_env"))
    with ray_process_env(loopback=loopback):
        try:
            ray.init(address="local" if address is None else address, **options)  # "local": never join another
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise RayUnavailableError(f"ray.init(address={address!r}) failed: {type(e).__name__}: {e}; for a "
                                      "cluster, check `ray status` on its head node (docs/scaling.md)") from e


def _node_args(cpus: int) -> dict[str, Any]:
    return {"num_cpus": cpus, "node_ip_address": LOOPBACK_IP, "include_dashboard": False}


@contextlib.contextmanager
def local_cluster(nodes: int = 2, cpus_per_node: int = 1) -> Iterator[Any]:
    """A ``ray.cluster_utils.Cluster`` of ``nodes`` loopback nodes, this process connected as its driver.

    Yields the cluster: ``cluster.add_node(**node_args(cpus))`` / ``cluster.remove_node(node)`` change it
    (add nodes inside :func:`ray_process_env`). Ray is shut down and the nodes stopped on exit. Refuses
    to start while Ray is already initialised in this process (``ray.shutdown()`` first).
    """
    ray = import_ray()
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        raise RayUnavailableError("local_cluster() expected Ray not to be initialised here, got a running "
                                  "ray.init(); call ray.shutdown() first")
    if nodes < 1 or cpus_per_node < 1:
        raise ValueError(f"expected nodes >= 1 and cpus_per_node >= 1, got {nodes} and {cpus_per_node}")
    with ray_process_env():
        cluster = Cluster(initialize_head=True, head_node_args=_node_args(cpus_per_node))
    try:
        for _ in range(nodes - 1):
            add_node(cluster, cpus_per_node)
        init_ray(cluster.address)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def add_node(cluster: Any, cpus: int = 1, **kwargs: Any) -> Any:
    """Add a loopback node of ``cpus`` CPUs to a :func:`local_cluster` and return it."""
    with ray_process_env():
        return cluster.add_node(**{**_node_args(cpus), **kwargs})
