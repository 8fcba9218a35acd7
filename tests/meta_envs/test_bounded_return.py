"""The meta-envs' episode return stays inside their ``reward_bounds`` (issue 32 §2: one bounded rule).

Each test sends the env's *own* invalid replies (no protocol wrapper), which before cost their penalty on
every step: SkillLibrary-v0 −4 against (−2, 1), TaskDesign-v0 and Reflect-v0 −3 and EnvDesign-v0 −3
against (−1, 1).
"""

from __future__ import annotations

import gymnasium
import pytest

import agentgym_envs  # noqa: F401  (registers the ids)

from meta_envs.bounded_return import bounded_reward

MALFORMED_SKILL = "---\nname: Not A Valid Name!\n---\nbody\n"
CASES = {
    # env id: (make kwargs, the env's own invalid replies)
    "agentgym/SkillLibrary-v0": ({}, ["FROBNICATE", "REMOVE no-such-skill", "EDIT nothing", "ADD\nnot a skill"]),
    "agentgym/TaskDesign-v0": ({"max_episode_steps": 6}, ["", " ", "x" * 20_000, "", "", ""]),
    "agentgym/Reflect-v0": ({}, [MALFORMED_SKILL] * 3),
    "agentgym/EnvDesign-v0": ({}, ["```python\n```"] * 3),
}


def _play(env_id: str, kwargs: dict, replies: list[str]) -> tuple[float, list[float], bool, dict]:
    env = gymnasium.make(env_id, **kwargs)
    try:
        env.reset(seed=0)
        rewards, ended, info = [], False, {}
        for reply in replies:
            _, reward, terminated, truncated, info = env.step(reply)
            rewards.append(reward)
            if terminated or truncated:
                ended = terminated
                break
        return sum(rewards), rewards, ended, info
    finally:
        env.close()


@pytest.mark.parametrize("env_id", sorted(CASES))
def test_own_invalid_replies_keep_the_return_inside_the_bounds(env_id):
    kwargs, replies = CASES[env_id]
    low, high = _bounds(env_id)
    total, rewards, ended, info = _play(env_id, kwargs, replies)
    assert low - 1e-9 <= total <= high + 1e-9, f"{env_id}: return {total} ({rewards}), bounds {(low, high)}"
    assert total == pytest.approx(low), "a stream of invalid replies earns exactly the floor"
    assert rewards[0] < 0, "the first invalid reply still costs its penalty"


def test_env_design_ends_on_an_invalid_reply_as_declared():
    """EnvDesign-v0 declares ``invalid_action_ends_episode``: a reply with no module ends it, as unparseable
    source always did."""
    total, rewards, ended, info = _play("agentgym/EnvDesign-v0", {}, ["```python\n```", "```python\n```"])
    assert (rewards, ended, info["action_valid"], info["outcome"]) == ([-1.0], True, False, "unparseable")


def test_a_cut_reward_is_reported_and_snapshots_carry_the_running_return():
    env = gymnasium.make("agentgym/SkillLibrary-v0")
    env.reset(seed=0)
    for _ in range(2):
        env.step("FROBNICATE")
    state = env.unwrapped.get_state()
    _, reward, _, _, info = env.step("FROBNICATE")
    assert (reward, info["reward_uncut"]) == (0.0, -1.0)
    other = gymnasium.make("agentgym/SkillLibrary-v0")
    other.reset(seed=1)
    other.unwrapped.set_state(state)
    assert other.unwrapped.step("FROBNICATE")[1] == 0.0
    env.close()
    other.close()


def test_bounded_reward_keeps_gains_and_cuts_past_either_bound():
    assert bounded_reward(0.7, -2.0, (-2.0, 1.0)) == 0.7
    assert bounded_reward(-3.0, 0.0, (-2.0, 1.0)) == -2.0
    assert bounded_reward(2.0, 0.5, (-1.0, 1.0)) == 0.5


def _bounds(env_id: str) -> tuple[float, float]:
    env = gymnasium.make(env_id)
    try:
        return tuple(env.unwrapped.reward_bounds)
    finally:
        env.close()
