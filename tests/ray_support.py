"""Shared Ray fixtures for the Ray tests: one loopback local cluster per test module.

Use it with ``from ray_support import ray_local  # noqa: F401`` in a test module (``tests/`` is on
``sys.path`` through its conftest); the fixture is module-scoped, so a module pays Ray's start-up once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentgym_envs.vector.ray_cluster import import_ray, init_ray


@pytest.fixture(scope="module")
def ray_local() -> Iterator[object]:
    """``init_ray(num_cpus=2)`` for this module (a loopback single-node cluster); shut down afterwards."""
    ray = import_ray()
    if ray.is_initialized():  # a previous module's cluster left running would hide this module's settings
        ray.shutdown()
    init_ray(num_cpus=2)
    try:
        yield ray
    finally:
        ray.shutdown()
