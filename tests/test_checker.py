"""check_env must catch broken envs, not only pass good ones: each broken env fails its specific check."""

from __future__ import annotations

import random

import pytest

from agentgym_envs.checker import check_env
from agentgym_envs.core import InvalidAction, Step, TextEnv


class Good(TextEnv):
    def __init__(self):
        super().__init__()
        self.n = 0

    def _reset(self, options):
        self.n = int(self.np_random.integers(10))
        return f"n={self.n}", {"instruction": "Count up to 15."}

    def _step(self, action):
        if action != "up":
            raise InvalidAction("say 'up'")
        self.n += 1
        return Step(f"n={self.n}", reward=float(self.n == 15), terminated=self.n == 15, won=self.n == 15)

    def valid_actions(self):
        return ["up"]


class UsesGlobalRandom(Good):
    def _step(self, action):
        step = super()._step(action)
        step.observation += f" noise={random.random()}"
        return step


class CrashesOnJunk(Good):
    def _step(self, action):
        if "\x00" in action:
            raise KeyError("unhandled input")
        return super()._step(action)


class RewardOutOfBounds(Good):
    def _step(self, action):
        step = super()._step(action)
        step.reward = 5.0
        return step


class ListsInvalidActions(Good):
    def valid_actions(self):
        return ["up", "down"]


class ForgetsStateInSnapshot(Good):
    snapshot_exclude = ("n",)


class BadInfo(Good):
    def _step(self, action):
        step = super()._step(action)
        step.info["won"] = "yes"
        return step


def _failed(env_cls):
    report = check_env(env_cls)
    return {r.name for r in report.failures}, report


def test_good_env_passes():
    failed, report = _failed(Good)
    assert report.passed, str(report)
    assert "verdict: PASSED" in str(report)


@pytest.mark.parametrize("env_cls, check", [
    (UsesGlobalRandom, "determinism"),
    (CrashesOnJunk, "fuzzed_actions"),
    (RewardOutOfBounds, "rollout_and_info"),
    (ListsInvalidActions, "valid_actions"),
    (ForgetsStateInSnapshot, "snapshot_roundtrip"),
    (BadInfo, "rollout_and_info"),
])
def test_broken_env_fails_its_check(env_cls, check):
    failed, report = _failed(env_cls)
    assert check in failed, str(report)
    assert "verdict: FAILED" in str(report)


class RefusesSnapshots(Good):
    def get_state(self):
        from agentgym_envs.core import SnapshotError

        raise SnapshotError("state lives in a live shell")


def test_env_refusing_snapshots_is_skipped_with_the_reason():
    report = check_env(RefusesSnapshots)
    results = {r.name: r for r in report.results}
    assert report.passed, str(report)
    assert results["snapshot_roundtrip"].status == "skip" and "live shell" in results["snapshot_roundtrip"].detail
