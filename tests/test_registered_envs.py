"""The whole check_env battery over every registered single-agent env: registering an env enrols it."""

from __future__ import annotations

import pytest

import agentgym_envs
from agentgym_envs.checker import check_env


@pytest.mark.parametrize("env_id", agentgym_envs.env_ids())
def test_registered_env_passes_check_env(env_id):
    report = check_env(env_id)
    assert report.passed, str(report)
