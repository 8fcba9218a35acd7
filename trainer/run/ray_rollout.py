"""Rollouts on Ray (``rollout.backend=ray``): the rollout worker's envs run as actors across a Ray cluster.

Only env stepping moves. The policy still samples in the trainer's process (or its vLLM engine) and the
update stays on the trainer's own process group (torch.distributed): Ray never sees a weight or a gradient.
The :class:`~trainer.collect.rollout.RolloutWorker` simply builds its vector env with ``mode="ray"``
(:mod:`agentgym_envs.vector.ray_mode`: actors hosting several envs each, spread over the nodes), so groups,
seeds and token bookkeeping are the local ones and a run gives the same trajectories on either backend for
the same seed (``tests/trainer/test_ray_rollout.py``).

Which cluster (``ray.address``): ``""`` starts a loopback cluster in this process (one machine, tests; shut
down with the trainer); ``auto`` or ``HOST:PORT`` joins a running one (``ray start`` on each machine,
docs/scaling.md). Under ``torchrun`` every rank joins the same cluster and drives its own share of envs.

Failures: an env actor or node lost mid-collection comes back as ``infra_error`` trajectories, which the
trainer already leaves out of the update (and counts in its metrics); the vector env starts a replacement
actor and the next collection goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import require

if TYPE_CHECKING:
    from .config import TrainConfig

_started_here = False


@dataclass
class RaySettings:
    """The Ray cluster of ``rollout.backend=ray`` (trainer/run/ray_rollout.py; docs/scaling.md)."""

    address: str = ""
    """``""``: start a loopback cluster in this process; ``auto`` or ``HOST:PORT``: join a running one."""
    num_cpus: int = 0
    """CPUs of a cluster started here (0: Ray's default, all of them); must be 0 when joining one."""
    envs_per_actor: int = 0
    """K, the envs each env actor hosts and steps in one call (0: the rollout envs spread over the CPUs)."""
    actor_cpus: float = 1.0
    """CPUs each env actor reserves (fractional for envs that mostly wait, e.g. on a sandbox or browser)."""

    def __post_init__(self) -> None:
        require(self.num_cpus >= 0, f"ray.num_cpus must be >= 0 (0: Ray's default), got {self.num_cpus}")
        require(self.envs_per_actor >= 0, f"ray.envs_per_actor must be >= 0 (0: automatic), got {self.envs_per_actor}")
        require(self.actor_cpus > 0, f"ray.actor_cpus must be > 0, got {self.actor_cpus}")
        require(not (self.address and self.num_cpus), f"ray.num_cpus is for a cluster started here; with "
                f"ray.address={self.address!r} expected ray.num_cpus=0, got {self.num_cpus}")


def vector_mode(config: TrainConfig) -> str:
    """The vector-env mode of the rollout worker: ``rollout.mode`` locally; ``"ray"`` (cluster joined or started)."""
    if config.rollout.backend == "local":
        return config.rollout.mode
    start_ray(config.ray)
    return "ray"


def ray_options(config: TrainConfig) -> dict[str, Any] | None:
    """The vector env's ``ray_options`` for ``rollout.backend=ray`` (``None`` locally)."""
    if config.rollout.backend == "local":
        return None
    return {"envs_per_actor": config.ray.envs_per_actor or None, "num_cpus": config.ray.actor_cpus}


def start_ray(settings: RaySettings) -> None:
    """Join ``settings.address`` or start a loopback cluster, once per process (a no-op if Ray is up)."""
    global _started_here
    from agentgym_envs.vector.ray_cluster import import_ray, init_ray

    if import_ray().is_initialized():
        return
    init_ray(settings.address or None, num_cpus=settings.num_cpus or None)
    _started_here = not settings.address


def stop_ray() -> None:
    """Shut down the cluster :func:`start_ray` started in this process (a joined one is left running)."""
    global _started_here
    if _started_here:
        ray: Any = __import__("ray")
        ray.shutdown()
        _started_here = False
