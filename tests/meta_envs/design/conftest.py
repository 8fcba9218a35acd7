"""Fixed seeds in tests: the host's measurement secret (gate and play seeds, policy RNGs) is fixed per test,
so design outcomes repeat run to run. Production draws it from the OS (``sandboxed.set_measurement_key``)."""

from __future__ import annotations

import pytest

from meta_envs.design.sandboxed import set_measurement_key


@pytest.fixture(autouse=True)
def fixed_measurement_key():
    set_measurement_key(b"issue-31-a")
    yield
    set_measurement_key(None)
