"""Optional env hooks are declared on TextEnv and asked for with core.hooks, never probed with hasattr."""

from __future__ import annotations

import subprocess
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import agentgym_envs
from agentgym_envs.checker import check_env
from agentgym_envs.core.errors import MissingHook, NoExpert, NoRandomAction
from agentgym_envs.core.hooks import has_expert, has_random_action, valid_actions
from agentgym_envs.core.text_env import Step, TextEnv

ROOT = Path(__file__).resolve().parents[1]


class Bare(TextEnv):
    """An env with neither hook and no listable actions."""

    def _reset(self, options):
        return "Say anything.", {"instruction": "say anything"}

    def _step(self, action):
        return Step("ok", reward=1.0, terminated=True, won=True)


def test_the_base_declares_the_hooks_and_says_what_to_do():
    env = Bare()
    env.reset(seed=0)
    assert not has_expert(env) and not has_random_action(env) and valid_actions(env) is None
    with pytest.raises(NoExpert, match="Bare has no scripted expert .*has_expert"):
        env.expert_action()
    with pytest.raises(NoRandomAction, match="Bare has no random_action"):
        env.random_action(np.random.default_rng(0))
    assert issubclass(NoExpert, MissingHook) and issubclass(MissingHook, NotImplementedError)


@pytest.mark.parametrize("env_id, expert, random", [
    ("agentgym/Maze-Easy-v0", True, False), ("agentgym/Wordle-v0", True, True), ("agentgym/GuessNumber-v0", True, False),
])
def test_registered_envs_report_their_hooks_through_wrappers(env_id, expert, random):
    env = gymnasium.make(env_id)  # TimeLimit, order enforcing, passive checker around the env
    assert isinstance(env, gymnasium.Wrapper)
    assert (has_expert(env), has_random_action(env)) == (expert, random)
    assert (has_expert(env.unwrapped), has_random_action(env.unwrapped)) == (expert, random)
    behind_protocol = agentgym_envs.make(env_id, protocol="react")
    assert has_expert(behind_protocol) == expert


def test_objects_that_are_not_text_envs_count_their_own_methods():
    class Seat:
        def valid_actions(self):
            return ["fold", "call"]

        def expert_action(self):
            return "call"

    assert has_expert(Seat()) and not has_random_action(Seat()) and valid_actions(Seat()) == ["fold", "call"]
    assert not has_expert(object()) and valid_actions(object()) is None


def test_checker_skips_the_hooks_an_env_lacks():
    report = check_env(Bare)
    status = {r.name: r.status for r in report.results}
    assert report.passed and status["expert"] == status["random_action"] == status["valid_actions"] == "skip"


def test_no_hasattr_probes_for_the_hooks_are_left():
    found = subprocess.run(["grep", "-rnE", r"hasattr\([^)]*(expert_action|random_action|valid_actions)",
                            "agentgym_envs", "trainer", "leaderboards", "--include=*.py"],
                           capture_output=True, text=True, cwd=ROOT).stdout
    assert found == "", found
