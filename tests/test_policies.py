"""agentgym_envs.policies: one contract, one random rule, one expert, and game seats built on them."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import numpy as np
import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.baselines import evaluate
from agentgym_envs.core import Step, TextEnv
from agentgym_envs.games.multiagent.league import League
from agentgym_envs.games.multiagent.selfplay import SelfPlayEnv
from agentgym_envs.policies import (ExpertPolicy, NoExpert, Policy, PolicyOpponent, RandomOpponent, RandomPolicy,
                                    SamplingConfig, SeatView, random_action, resolve_opponent)
from agentgym_envs.protocols import ActionProtocolWrapper


class _Listed:
    def valid_actions(self):
        return ["north", "south", "east"]


class _Drawn:
    def valid_actions(self):
        return []

    def random_action(self, rng):
        return f"guess {int(rng.integers(1000))}"


class _NoExpert(TextEnv):
    def _reset(self, options):
        return "Nothing here.", {"instruction": "Say done."}

    def _step(self, action):
        return Step("Done.", terminated=True, won=False)


def test_the_random_rule_lists_then_draws_then_types_a_short_string():
    assert random_action(_Listed(), np.random.default_rng(3)) == ["north", "south", "east"][np.random.default_rng(3).integers(3)]
    assert random_action(_Drawn(), np.random.default_rng(3)) == f"guess {np.random.default_rng(3).integers(1000)}"
    typed = {random_action(object(), np.random.default_rng(s)) for s in range(50)}
    assert all(0 < len(t) <= 12 and set(t) <= set("abcdefghijklmnopqrstuvwxyz0123456789 ") for t in typed)
    assert len(typed) == 50  # not one constant fallback (the trainer's old baseline typed "look" everywhere)


def test_random_policy_is_a_function_of_the_seed_on_a_stream_apart_from_the_envs():
    env = gymnasium.make("agentgym/Household-v0")
    env.reset(seed=0)
    actions = env.unwrapped.valid_actions()
    policy = RandomPolicy()
    policy.bind([env])
    replies = [policy.act([[]], sampling=SamplingConfig(seed=s))[0].text for s in range(40)]
    assert replies == [policy.act([[]], sampling=SamplingConfig(seed=s))[0].text for s in range(40)]
    assert set(replies) <= set(actions) and len(set(replies)) > 5
    mirrored = [actions[int(np.random.default_rng(s).integers(len(actions)))] for s in range(40)]
    assert sum(a == b for a, b in zip(replies, mirrored)) < 10  # draws do not mirror default_rng(seed)


def test_random_policy_with_its_own_generator_continues_one_stream():
    env = gymnasium.make("agentgym/Household-v0")
    env.reset(seed=0)
    actions = env.unwrapped.valid_actions()
    policy = RandomPolicy(rng=np.random.default_rng(5))
    policy.bind([env])
    replies = [policy.act([[]], sampling=SamplingConfig(seed=0))[0].text for _ in range(20)]
    reference = np.random.default_rng(5)
    assert replies == [actions[int(reference.integers(len(actions)))] for _ in range(20)]


@pytest.mark.parametrize("protocol", ["tags", "react", "tool_calls"])
def test_env_side_replies_use_the_bound_wrappers_protocol_and_parse_back(protocol):
    env = ActionProtocolWrapper(gymnasium.make("agentgym/Maze-Easy-v0"), protocol)
    env.reset(seed=0)
    for policy in (ExpertPolicy(), RandomPolicy()):
        policy.bind([env])
        reply = policy.act([[]], sampling=SamplingConfig(seed=1))[0].text
        parsed = env.protocol.parse(reply, env.unwrapped)
        assert parsed.error is None and parsed.action in env.unwrapped.valid_actions()
        assert reply != parsed.action  # rendered, not the bare native action
    _, _, _, _, info = env.step(reply)
    assert info["action_valid"] is True


def test_random_characters_that_name_no_tool_are_an_invalid_reply_not_a_crash():
    """GuessNumber has no valid-action list, so the random rule types characters; under tool calls they name
    no tool and cannot be rendered as a call. They go to the env as they are: the agent's invalid action."""
    env = agentgym_envs.make("agentgym/GuessNumber-v0", protocol="tool_calls")
    env.reset(seed=0)
    policy = RandomPolicy()
    policy.bind([env])
    reply = policy.act([[]], sampling=SamplingConfig(seed=1))[0].text
    assert reply and "<tool_call>" not in reply
    _, _, _, _, info = env.step(reply)
    assert info["action_valid"] is False and not info.get("infra_error")


def test_an_explicit_protocol_wins_and_an_unwrapped_env_gets_native_actions():
    env = ActionProtocolWrapper(gymnasium.make("agentgym/Maze-Easy-v0"), "react")
    env.reset(seed=0)
    expert = ExpertPolicy("tags")
    expert.bind([env])
    assert expert.act([[]], sampling=SamplingConfig())[0].text.startswith("<action>")
    native = ExpertPolicy()
    native.bind([env.unwrapped])
    assert native.act([[]], sampling=SamplingConfig())[0].text == env.unwrapped.expert_action()


def test_expert_on_an_env_without_one_says_so_and_batches_must_match_the_binding():
    if "agentgym/TestPoliciesNoExpert-v0" not in gymnasium.registry:
        gymnasium.register("agentgym/TestPoliciesNoExpert-v0", entry_point=_NoExpert, max_episode_steps=3)
    env = gymnasium.make("agentgym/TestPoliciesNoExpert-v0")
    env.reset(seed=0)
    expert = ExpertPolicy()
    expert.bind([env])
    with pytest.raises(NoExpert, match="TestPoliciesNoExpert-v0 has no expert_action"):
        expert.act([[]], sampling=SamplingConfig())
    with pytest.raises(ValueError, match=r"expected one chat per bound env \(1\), got 2"):
        expert.act([[], []], sampling=SamplingConfig())


def test_random_opponent_is_the_random_rule_on_the_seat_with_the_drivers_generator():
    legal = ["1", "5", "9", "3"]
    for seed in range(20):
        move = RandomOpponent()("board", {"valid_actions": legal, "rng": np.random.default_rng(seed)})
        assert move == random_action(SeatView({"valid_actions": legal}), np.random.default_rng(seed))
        assert move == legal[int(np.random.default_rng(seed).integers(len(legal)))]


def test_any_policy_takes_a_seat_deterministically_and_plays_legal_moves():
    def league():
        return League("agentgym/TicTacToe-v0", {"model": RandomPolicy(), "scripted": "scripted"}, games_per_pair=6).play()

    first, second = league(), league()
    assert [m.payoffs for m in first.matches] == [m.payoffs for m in second.matches]
    seat = resolve_opponent(RandomPolicy(), None)
    assert isinstance(seat, PolicyOpponent)
    env = SelfPlayEnv("agentgym/TicTacToe-v0", opponent=RandomPolicy())
    for seed in range(6):
        env.reset(seed=seed)
        terminated = False
        while not terminated:
            _, _, terminated, _, info = env.step(env.expert_action())
        assert info["opponent_forfeited"] is False  # the seat's legal moves are what the random rule drew from


def test_a_model_like_policy_reads_the_seats_observation_as_a_chat():
    seen = []

    class Echo:
        def act(self, batch, *, sampling):
            seen.append((batch, sampling.seed))
            from agentgym_envs.policies import Completion
            return [Completion("5")]

    assert isinstance(Echo(), Policy)
    seat = PolicyOpponent(Echo(), system_prompt="Play well.")
    assert seat("Your move.", {"valid_actions": ["5"], "rng": np.random.default_rng(0)}) == "5"
    (batch, seed), = seen
    assert batch == [[{"role": "system", "content": "Play well."}, {"role": "user", "content": "Your move."}]]
    assert seed == int(np.random.default_rng(0).integers(2**32))


def test_baselines_evaluate_through_the_one_policy_pair():
    again = [evaluate("agentgym/Maze-Easy-v0", "random", episodes=4, seed=3) for _ in range(2)]
    assert again[0].mean_steps == again[1].mean_steps and again[0].mean_return == again[1].mean_return
    assert evaluate("agentgym/Maze-Easy-v0", "expert", episodes=3).success == 1.0
    with pytest.raises(ValueError, match="agent must be 'random' or 'expert', got 'oracle'"):
        evaluate("agentgym/Maze-Easy-v0", "oracle", episodes=1)


def test_the_policy_package_is_the_lowest_layer():
    code = ("import sys, agentgym_envs.policies, agentgym_envs.baselines; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('trainer', 'leaderboards', 'torch')); "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
