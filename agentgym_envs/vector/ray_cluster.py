"""Start or join a Ray cluster that keeps to loopback and stays quiet (the extra ``agentgym[ray]``).

Left to its defaults, Ray 2.60 does three things that a test run or a laptop must not:

* it binds and advertises the machine's own non-loopback address: :func:`init_ray` and
  :func:`local_cluster` pin the node IP to ``127.0.0.1`` (``ray start`` takes ``--node-ip-address=127.0.0.1``);
* it reports usage stats: ``RAY_USAGE_STATS_ENABLED=0`` turns the report off, and
  ``RAY_USAGE_STATS_REPORT_URL`` points the one "usage is disabled" notice that a ``ray start`` cluster
  still sends at the loopback discard port, where it fails at once;
* its usage-stats module (loaded in the dashboard process even with the dashboard off) asks the
  cloud-metadata address ``169.254.169.254`` which cloud it runs on, unless ``~/ray_bootstrap_config.yaml``
  names the provider. Ray's head processes are therefore started with ``HOME`` set to a scratch directory
  (:func:`bootstrap_home`) whose bootstrap file says ``provider: {type: local}``; env workers get the
  user's real ``HOME`` back through the job's ``runtime_env``. For ``ray start`` by hand:
  ``HOME=$(python -c 'from agentgym_envs.vector.ray_cluster import bootstrap_home; print(bootstrap_home())')``.

The dashboard is off (``include_dashboard=False``) and ``RAY_AUTH_MODE=disabled`` is set for local
clusters; a cluster across machines needs a shared token instead (docs/scaling.md).
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
#: Environment variables that keep Ray on loopback and quiet; set (if unset) by :func:`init_ray`.
LOOPBACK_ENV: dict[str, str] = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_USAGE_STATS_PROMPT_ENABLED": "0",
    "RAY_USAGE_STATS_REPORT_URL": "http://127.0.0.1:9/",
    "RAY_AUTH_MODE": "disabled",
    "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
}
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
def ray_process_env() -> Iterator[None]:
    """While Ray starts its head and node processes: :data:`LOOPBACK_ENV` set (kept afterwards, so the
    driver is quiet too) and ``HOME`` pointing at :func:`bootstrap_home` (restored afterwards)."""
    home = bootstrap_home()
    with _env_lock:
        for key, value in LOOPBACK_ENV.items():
            os.environ.setdefault(key, value)
        old_home = os.environ.get("HOME")
        os.environ["HOME"] = home
        try:
            yield
        finally:
            if old_home is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = old_home


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
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
    if address is None:
        options.update(num_cpus=num_cpus, _node_ip_address=LOOPBACK_IP)
    options.update(kwargs)
    options["runtime_env"] = worker_runtime_env(options.get("runtime_env"))
    with ray_process_env():
        try:
            ray.init(address=address, **options)
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
        init_ray(cluster.address, _node_ip_address=LOOPBACK_IP)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def add_node(cluster: Any, cpus: int = 1, **kwargs: Any) -> Any:
    """Add a loopback node of ``cpus`` CPUs to a :func:`local_cluster` and return it."""
    with ray_process_env():
        return cluster.add_node(**{**_node_args(cpus), **kwargs})
