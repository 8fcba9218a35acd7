"""How ``TextVectorEnv(mode="ray")`` lays envs out on Ray actors: :class:`RayOptions` (``ray_options=``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .ray_cluster import import_ray
from .worker import STARTUP_TIMEOUT_S

ray = import_ray()


@dataclass(frozen=True)
class RayOptions:
    """How ``mode="ray"`` lays envs out; every field has a default (``TextVectorEnv(ray_options={...})``).

    Args:
        envs_per_actor: K, the envs one actor hosts (default: spread ``num_envs`` over ``num_actors``).
        num_actors: how many actors (default: as many as the cluster's CPUs allow at ``num_cpus`` each,
            at most ``num_envs``); give one of ``envs_per_actor``/``num_actors``, or neither.
        num_cpus: CPUs each actor reserves (fractional is fine: envs that mostly wait need little).
        scheduling_strategy: Ray's placement for the actors (``"SPREAD"`` over nodes, or ``"DEFAULT"``).
        startup_timeout: seconds an actor may take to be scheduled and build its envs: the first layout
            past it stops with an error instead of hanging; a lost env whose replacement is not built in
            time (``ray_mode.REPLACEMENT_WAIT_S`` while other actors survive) joins a surviving actor.
        close_timeout: seconds :meth:`~TextVectorEnv.close` waits for an actor's envs to close themselves
            (one after another: K browsers or sandbox leases) before it stops the actor.
        threads_per_actor: ``> 1`` steps an actor's envs side by side in that many threads, for envs that
            mostly wait (a browser, a terminal, a server); envs that use signals need the default ``1``.
        address: the cluster to join if Ray is not initialised yet (``None``: a loopback local cluster).
    """

    envs_per_actor: int | None = None
    num_actors: int | None = None
    num_cpus: float = 1.0
    scheduling_strategy: str = "SPREAD"
    threads_per_actor: int = 1
    startup_timeout: float = STARTUP_TIMEOUT_S
    close_timeout: float = 10.0
    address: str | None = None

    @classmethod
    def of(cls, value: RayOptions | Mapping[str, Any] | None) -> RayOptions:
        if isinstance(value, cls):
            return value
        if value is None:
            return cls()
        unknown = set(value) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"expected ray_options keys among {sorted(cls.__dataclass_fields__)}, got {sorted(unknown)}")
        return cls(**value)

    def layout(self, num_envs: int) -> int:
        """K, the number of envs per actor, for ``num_envs`` envs (Ray must be initialised)."""
        if self.envs_per_actor is not None and self.num_actors is not None:
            raise ValueError("give ray_options envs_per_actor or num_actors, not both")
        if not self.num_cpus > 0 or self.threads_per_actor < 1:
            raise ValueError(f"expected ray_options num_cpus > 0 and threads_per_actor >= 1, got "
                             f"{self.num_cpus!r} and {self.threads_per_actor!r}")
        largest = max((node["Resources"].get("CPU", 0.0) for node in ray.nodes() if node["Alive"]), default=0.0)
        if self.num_cpus > largest:
            raise ValueError(f"expected ray_options num_cpus <= {largest} (the most CPUs of one node in this "
                             f"cluster), got {self.num_cpus}: such an actor could never be scheduled")
        if self.envs_per_actor is not None:
            k = self.envs_per_actor
        else:
            actors = self.num_actors or int(ray.cluster_resources().get("CPU", 1) // self.num_cpus)
            k = math.ceil(num_envs / max(1, min(num_envs, actors)))
        if k < 1:
            raise ValueError(f"expected at least 1 env per actor, got {k}")
        return k
