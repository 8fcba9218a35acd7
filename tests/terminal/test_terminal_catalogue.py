"""The shipped task set: size, coverage, well-formedness, splits and filters, deterministic expert rollouts."""

from __future__ import annotations

from collections import Counter

import pytest
from terminal_backends import require_backend

from agentgym_envs.checker import same
from agentgym_envs.terminal.env import TerminalEnv
from agentgym_envs.terminal.task import DIFFICULTIES, CommandTests
from agentgym_envs.terminal.tasks import ALL_TASKS, CATEGORIES, builtin_tasks, split_of

REQUIRED_CATEGORIES = {"files", "text", "python", "git", "build", "data", "permissions", "processes"}


def test_at_least_forty_tasks_across_every_category():
    assert len(ALL_TASKS) >= 40
    counts = Counter(t.category for t in ALL_TASKS)
    assert set(counts) == REQUIRED_CATEGORIES and min(counts.values()) >= 5
    assert set(Counter(t.difficulty for t in ALL_TASKS)) == set(DIFFICULTIES)


@pytest.mark.parametrize("task", ALL_TASKS, ids=lambda t: t.id)
def test_tasks_are_well_formed(task):
    assert task.instruction and task.solution and task.id.startswith(task.category + "/")
    assert isinstance(task.verifier, CommandTests) and task.verifier.tests
    assert all(name and command for name, command in task.verifier.tests)


def test_ids_are_unique_and_splits_are_stable():
    assert len({t.id for t in ALL_TASKS}) == len(ALL_TASKS)
    train, test = builtin_tasks("train"), builtin_tasks("test")
    assert {t.id for t in train}.isdisjoint(t.id for t in test) and len(train) + len(test) == len(ALL_TASKS)
    assert all(split_of(t) == "test" for t in test) and len(test) >= 5


def test_filters():
    assert {t.category for t in builtin_tasks(category="git")} == {"git"}
    assert {t.difficulty for t in builtin_tasks(difficulty="hard")} == {"hard"}
    with pytest.raises(ValueError, match="split must be one of"):
        builtin_tasks("dev")
    with pytest.raises(ValueError, match="category must be one of"):
        builtin_tasks(category="networking")
    assert CATEGORIES


def test_expert_rollouts_are_deterministic():
    """Same task and actions give identical observations and infos (git dates are pinned, no clocks shown)."""
    require_backend("bwrap")
    a, b = TerminalEnv(), TerminalEnv()
    try:
        for index in range(a.num_tasks):
            assert same(a.reset(seed=1, options={"task_index": index}), b.reset(seed=1, options={"task_index": index}))
            while True:
                action = a.unwrapped.expert_action()
                step_a, step_b = a.step(action), b.step(action)
                assert same(step_a, step_b), (a.task.id, action)
                if step_a[2] or step_a[3]:
                    break
    finally:
        a.close()
        b.close()
