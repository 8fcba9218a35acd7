"""Every shipped task on both real backends: the reference solution passes all tests, doing nothing fails."""

from __future__ import annotations

import pytest
from terminal_backends import REAL_BACKENDS

from agentgym_envs.terminal.tasks import ALL_TASKS

TASK_IDS = [t.id for t in ALL_TASKS]


def play_expert(env, index: int):
    env.reset(seed=0, options={"task_index": index})
    for _ in range(len(env.task.solution) + 1):
        observation, reward, terminated, truncated, info = env.step(env.expert_action())
        assert info["action_valid"] and info["infra_error"] is None, observation
        if terminated or truncated:
            return observation, reward, info
    raise AssertionError("the expert never submitted")


@pytest.mark.parametrize("backend", REAL_BACKENDS)
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reference_passes_and_doing_nothing_fails(make_env, backend, task_id):
    env = make_env(backend)
    index = TASK_IDS.index(task_id)
    observation, reward, info = play_expert(env, index)
    assert info["won"] and reward == 1.0 and all(info["tests"].values()), observation
    _, info = env.reset(seed=0, options={"task_index": index})
    assert info["infra_error"] is None
    observation, reward, terminated, _, info = env.step("submit")
    assert terminated and not info["won"] and reward < 1.0, observation
