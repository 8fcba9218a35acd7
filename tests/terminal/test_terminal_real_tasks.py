"""Real public Terminal-Bench and Harbor tasks, imported as shipped (fixtures/real/SOURCE.md says from where).

The goal of issue 15: at least 12 of the 20 pass with their own oracle solution on each backend, none
passes for an agent that does nothing, and every task that cannot run is refused with its reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from terminal_backends import REAL_BACKENDS, require_backend

from agentgym_envs.terminal import load_task_dirs
from agentgym_envs.terminal.env import TerminalEnv

REAL = Path(__file__).parent / "fixtures" / "real"
EXPECTED_TASKS = 20
EXPECTED_ORACLE_PASSES = 12


def outcome(env: TerminalEnv, index: int, *, oracle: bool) -> tuple[float, str]:
    """Play task ``index`` with the oracle (or submit at once); the reward and the last observation."""
    env.reset(seed=0, options={"task_index": index})
    while True:
        observation, reward, terminated, truncated, info = env.step(env.expert_action() if oracle else "submit")
        if terminated or truncated:
            return (reward if info["infra_error"] is None else -1.0), observation


def test_the_fixture_set_is_twenty_real_tasks_with_their_licences():
    refused: list[tuple[str, str]] = []
    tasks = load_task_dirs(REAL, refused)
    assert len(tasks) + len(refused) == EXPECTED_TASKS
    assert {t.source for t in tasks} == {"terminal-bench", "harbor"}
    for repo in ("terminal-bench-datasets", "harbor-cookbook"):
        assert "Apache License" in (REAL / repo / "LICENSE").read_text()
    assert refused == [("harbor-cookbook/multi-step",
                        "multi-step: a Harbor task needs tests/test.sh (its verifier), found none")]
    notes = {n for t in tasks for n in t.notes}
    assert any("FROM ghcr.io/laude-institute/t-bench/python-3-13" in n for n in notes)
    assert any("astral.sh/uv" in n for n in notes) and any("pip install of pytest" in n for n in notes)


@pytest.mark.parametrize("backend", REAL_BACKENDS)
def test_real_tasks_pass_with_their_oracle_and_never_for_a_do_nothing_agent(backend):
    require_backend(backend)
    refused: list[tuple[str, str]] = []
    env = TerminalEnv(tasks=load_task_dirs(REAL, refused), backend=backend, skip_unavailable=True)
    try:
        refused += env.refused
        assert all(reason.strip() for _, reason in refused), refused
        oracle, nothing, failures = 0, 0, []
        for index, task in enumerate(env.tasks):
            reward, observation = outcome(env, index, oracle=True)
            oracle += reward == 1.0
            if reward != 1.0:
                failures.append(f"{task.id}: {reward}\n{observation[-400:]}")
            nothing += outcome(env, index, oracle=False)[0] == 1.0
        summary = f"{oracle} of {EXPECTED_TASKS} pass with the oracle; refused: {refused}; failed:\n"
        summary += "\n".join(failures)
        assert oracle >= EXPECTED_ORACLE_PASSES, summary
        assert nothing == 0, f"{nothing} tasks pass for an agent that does nothing"
        assert len(env.tasks) + len(refused) == EXPECTED_TASKS
    finally:
        env.close()
