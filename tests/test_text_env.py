"""The TextEnv base enforces the contract: bad input never raises, standard info, snapshots, infra errors."""

from __future__ import annotations

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym_envs  # noqa: F401
from agentgym_envs.core import InfraError, InvalidAction, ResetNeeded, SnapshotError, Step, TextEnv, UnicodeText
from agentgym_envs.core.snapshots import seal_snapshot
from agentgym_envs.examples.maze import MazeEnv


class Counter(TextEnv):
    """Counts 'inc' actions; 'fail' simulates a broken backend; 'huge' returns a huge observation."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _reset(self, options):
        self.count = int(self.np_random.integers(0, 5))
        return f"count={self.count}", {"instruction": "Reach 10."}

    def _step(self, action):
        if action == "fail":
            raise InfraError("backend connection refused")
        if action == "huge":
            return Step("x" * (self.max_observation_chars * 2))
        if action != "inc":
            raise InvalidAction(f"unknown action {action!r}")
        self.count += 1
        done = self.count >= 10
        return Step(f"count={self.count}", reward=float(done), terminated=done, won=done)

    def valid_actions(self):
        return ["inc"]


def test_unicode_text_admits_any_string_within_bounds():
    space = UnicodeText(10)
    assert space.contains("中文 ☕ ü") and space.contains("")
    assert not space.contains("x" * 11) and not space.contains(None) and not space.contains(b"ab")
    assert all(space.contains(space.sample()) for _ in range(20))
    assert UnicodeText(10) == UnicodeText(10) != UnicodeText(11)


def test_step_before_reset_is_a_programming_error():
    with pytest.raises(ResetNeeded, match="call env.reset"):
        Counter().step("inc")


@pytest.mark.parametrize(
    "action, message",
    [("", "empty"), ("   ", "empty"), (None, "expected a string, got NoneType"), (42, "got int"),
     ("x" * 20_000, "20,000 characters"), ("jump", "unknown action")],
)
def test_bad_actions_become_observations(action, message):
    env = Counter()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert message in obs and info["parse_error"] and message in info["parse_error"]
    assert info["action_valid"] is False and reward == 0.0 and not terminated and not truncated
    assert env.step("inc")[4]["action_valid"]  # the episode goes on


def test_bytes_actions_are_decoded():
    env = Counter()
    env.reset(seed=0)
    assert env.step(b"inc")[4]["action_valid"]


def test_standard_info_keys_on_reset_and_step():
    env = Counter()
    _, info = env.reset(seed=0)
    for key in ("instruction", "system_prompt", "action_valid", "parse_error", "won", "score", "state_key", "infra_error", "metrics", "valid_actions"):
        assert key in info, key
    assert info["instruction"] == "Reach 10." and info["valid_actions"] == ["inc"]


def test_infra_error_truncates_and_is_not_blamed_on_agent():
    env = Counter()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("fail")
    assert info["infra_error"] == "backend connection refused" and info["action_valid"] is True
    assert truncated and not terminated and "not your fault" in obs
    obs, _, terminated, truncated, info = env.step("inc")
    assert info["infra_error"] == "backend connection refused" and (terminated, truncated) == (False, True)
    env.reset(seed=1)
    assert env.step("inc")[4]["action_valid"]


def test_long_observations_are_cut_with_a_marker():
    env = Counter()
    env.reset(seed=0)
    obs = env.step("huge")[0]
    assert len(obs) == env.max_observation_chars and obs.endswith("characters]") and "truncated" in obs


def test_state_key_equal_for_equal_states_and_unchanged_by_invalid_actions():
    a, b = Counter(), Counter()
    a.reset(seed=3)
    b.reset(seed=3)
    key = a.step("inc")[4]["state_key"]
    assert b.step("inc")[4]["state_key"] == key
    assert a.step("nonsense")[4]["state_key"] == key
    assert a.step("inc")[4]["state_key"] != key


def test_snapshot_roundtrip_includes_rng_and_rejects_foreign_bytes():
    env = MazeEnv(size=5)
    env.reset(seed=7)
    snapshot = env.get_state()
    first = [env.reset()[0] for _ in range(3)]  # uses the env's RNG stream
    env.set_state(snapshot)
    assert [env.reset()[0] for _ in range(3)] == first
    with pytest.raises(SnapshotError, match="expected a snapshot made by get_state"):
        env.set_state(b"\x00garbage")
    with pytest.raises(SnapshotError, match="cannot restore into"):
        env.set_state(Counter().get_state())
    with pytest.raises(SnapshotError, match="version"):
        env.set_state(seal_snapshot({"version": 999}))


@settings(max_examples=300)
@given(st.text(max_size=300) | st.binary(max_size=100) | st.integers() | st.none())
def test_any_action_never_raises(action):
    env = gymnasium.make("agentgym/Maze-Easy-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and reward in (0.0, 1.0) and isinstance(info["action_valid"], bool)


@settings(max_examples=40)
@given(st.lists(st.sampled_from(["go north", "go south", "go east", "go west", "look", "n", "jump", ""]), max_size=25),
       st.integers(0, 2**31 - 1))
def test_same_seed_same_actions_same_trajectory(actions, seed):
    def rollout():
        env = gymnasium.make("agentgym/Maze-v0")
        out = [env.reset(seed=seed)]
        for action in actions:
            out.append(env.step(action))
            if out[-1][2] or out[-1][3]:
                break
        return out

    assert rollout() == rollout()


class FailsToStart(Counter):
    def _reset(self, options):
        raise InfraError("simulator did not boot")


def test_failed_reset_reports_infra_error_on_later_steps_too():
    env = FailsToStart()
    obs, info = env.reset(seed=0)
    assert info["infra_error"] == "simulator did not boot" and "not your fault" in obs
    obs, reward, terminated, truncated, info = env.step("inc")
    assert info["infra_error"] == "simulator did not boot" and info["action_valid"] is True
    assert (reward, terminated, truncated) == (0.0, False, True)


def test_lone_surrogates_are_replaced_before_the_env_sees_them():
    seen = []

    class Recorder(Counter):
        def _step(self, action):
            seen.append(action)
            return super()._step(action)

    env = Recorder()
    env.reset(seed=0)
    env.step("in\ud800c")
    assert seen == ["in\ufffdc"] and seen[0].encode("utf-8")
