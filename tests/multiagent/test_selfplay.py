"""The self-play wrapper: seats, opponents (built-in and callables), outcomes, snapshots, the expert."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym_envs
from agentgym_envs.checker import check_env, same
from agentgym_envs.games.multiagent.selfplay import SelfPlayEnv

GAMES = [i.removesuffix("-v0") for i in agentgym_envs.multi_ids()]


def first_legal(observation, info):
    return info["valid_actions"][0]


def test_seat_alternates_by_seed_and_between_unseeded_resets():
    env = gymnasium.make("agentgym/TicTacToe-VsScripted-v0")
    assert [env.reset(seed=s)[1]["seat"] for s in (4, 5, 6)] == ["player_0", "player_1", "player_0"]
    assert [env.reset()[1]["seat"] for _ in range(3)] == ["player_1", "player_0", "player_1"]
    assert env.reset(seed=5, options={"seat": 0})[1]["seat"] == "player_0"
    fixed = gymnasium.make("agentgym/TicTacToe-VsScripted-v0", seat=1)
    assert {fixed.reset(seed=s)[1]["seat"] for s in range(4)} == {"player_1"}


def test_second_seat_sees_the_opponents_first_move():
    env = gymnasium.make("agentgym/TicTacToe-VsScripted-v0")
    obs, info = env.reset(seed=1)
    assert info["seat"] == "player_1" and "Your opponent marked cell" in obs and len(info["valid_actions"]) == 8
    assert "Tic-tac-toe" in info["instruction"] and info["system_prompt"].startswith("You are playing tic-tac-toe")


def test_callable_opponent_gets_observation_info_and_rng():
    calls = []

    def opponent(observation, info):
        calls.append((observation, info))
        return info["valid_actions"][0]

    env = gymnasium.make("agentgym/ConnectFour-VsScripted-v0", opponent=opponent)
    env.reset(seed=1)
    observation, info = calls[0]
    assert isinstance(observation, str) and "Your move" in observation
    assert isinstance(info["rng"], np.random.Generator) and info["view"]["player"] == 0 and info["instruction"]


def test_learner_illegal_move_loses_and_opponent_illegal_move_wins():
    env = gymnasium.make("agentgym/TicTacToe-VsScripted-v0")
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("cell 42")
    assert (reward, terminated, info["action_valid"], info["won"]) == (-1.0, True, False, False)
    assert info["role_outcomes"] == {"player_0": -1.0, "player_1": 1.0} and "not a legal move" in info["parse_error"]

    env = gymnasium.make("agentgym/TicTacToe-VsScripted-v0", opponent=lambda o, i: "no idea")
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step("5")
    assert (reward, terminated, info["won"], info["opponent_forfeited"]) == (1.0, True, True, True)
    obs, info = env.reset(seed=1)  # the opponent moves first and forfeits at once
    assert "forfeits" in obs
    obs, reward, terminated, _, info = env.step("anything")
    assert (reward, terminated, info["won"]) == (1.0, True, True)


def test_a_game_over_before_the_learners_first_move_ends_on_continue():
    env = gymnasium.make("agentgym/LimitHoldem-VsScripted-v0", opponent=lambda o, i: "fold")
    obs, info = env.reset(seed=1)  # the learner is the big blind; the button folds at once
    assert "ended before your first move" in obs and info["valid_actions"] == ["continue"]
    assert env.unwrapped.expert_action() == "continue"
    _, reward, terminated, _, info = env.step("continue")
    assert terminated and reward == pytest.approx(1 / 48) and info["won"] and info["valid_actions"] == []


def test_malformed_input_is_the_text_contracts_business():
    """Input the game never sees (empty, not a string) is an invalid action, and the games' rule
    (``invalid_action_ends_episode``) holds for it too: -1 once, the episode over, nothing paid after."""
    env = gymnasium.make("agentgym/KuhnPoker-VsScripted-v0")
    for bad in ("", None, 3):
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(bad)
        assert reward == -1.0 and terminated and not truncated and info["action_valid"] is False
        assert "ends this episode" in obs
        assert env.step("check")[1:3] == (0.0, True)
    env.reset(seed=0)
    assert env.step(env.unwrapped.expert_action())[4]["action_valid"]


def test_a_crashing_opponent_is_an_infra_error():
    def broken(observation, info):
        raise ConnectionError("model server down")

    env = gymnasium.make("agentgym/TicTacToe-VsScripted-v0", opponent=broken)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("5")
    assert truncated and not terminated and reward == 0.0 and "model server down" in info["infra_error"]


def test_snapshot_leaves_the_opponent_out_and_replays_identically():
    env = gymnasium.make("agentgym/LimitHoldem-VsScripted-v0", opponent=lambda o, i: i["valid_actions"][-1])
    env.reset(seed=3)
    snapshot = env.unwrapped.get_state()
    moves = ["call", "check", "check", "check", "check"]
    first = [env.step(m) for m in moves]
    env.unwrapped.set_state(snapshot)
    assert same(first, [env.step(m) for m in moves])


def test_expert_action_does_not_change_the_episode():
    a, b = gymnasium.make("agentgym/LimitHoldem-VsRandom-v0"), gymnasium.make("agentgym/LimitHoldem-VsRandom-v0")
    a.reset(seed=8), b.reset(seed=8)
    for _ in range(12):
        move = a.unwrapped.expert_action()
        b.unwrapped.expert_action(), b.unwrapped.expert_action()  # extra calls on b only
        out_a, out_b = a.step(move), b.step(move)
        assert same(out_a, out_b)
        if out_a[2]:
            break


@pytest.mark.parametrize("game", GAMES)
def test_expert_beats_random_across_seats(game):
    env = gymnasium.make(f"{game}-VsRandom-v0")
    returns, seats = [], set()
    episodes = {"agentgym/KuhnPoker": 400, "agentgym/LimitHoldem": 100}.get(game, 40)  # poker payoffs are noisy
    for seed in range(episodes):
        _, info = env.reset(seed=seed)
        seats.add(info["seat"])
        while True:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.expert_action())
            assert info["action_valid"]
            if terminated or truncated:
                break
        assert set(info["role_outcomes"]) == {"player_0", "player_1"} and f"won_as_{info['seat']}" in info["metrics"]
        returns.append(info["role_outcomes"][info["seat"]])
    assert seats == {"player_0", "player_1"}
    if "RockPaperScissors" in game:  # uniform random is RPS's equilibrium: nothing beats it in expectation
        assert abs(np.mean(returns)) < 0.5
    else:
        assert np.mean(returns) > 0.0


def test_game_kwargs_and_factories():
    env = gymnasium.make("agentgym/RockPaperScissors-VsScripted-v0", game_kwargs={"rounds": 3})
    env.reset(seed=0)
    steps = 0
    while not env.step("rock")[2]:
        steps += 1
    assert steps == 2
    from agentgym_envs.games.multiagent.tictactoe import env as tictactoe_env

    assert check_env(lambda: SelfPlayEnv(tictactoe_env, opponent=first_legal)).passed


def test_bad_configuration_is_explained():
    with pytest.raises(ValueError, match="opponent must be 'random', 'scripted' or a callable"):
        SelfPlayEnv("agentgym/TicTacToe-v0", opponent="grandmaster")
    with pytest.raises(ValueError, match="seat must be 'alternate' or a seat index"):
        SelfPlayEnv("agentgym/TicTacToe-v0", seat=2)
    with pytest.raises(agentgym_envs.core.UnknownEnvError, match="Did you mean"):
        SelfPlayEnv("agentgym/TicTacToe-v9")


def test_set_opponent_swaps_the_policy_between_episodes():
    env = gymnasium.make("agentgym/TicTacToe-VsScripted-v0")
    env.unwrapped.set_opponent(lambda observation, info: "no idea")
    env.reset(seed=0)
    assert env.step("5")[4]["opponent_forfeited"]


@settings(max_examples=30)
@given(game=st.sampled_from(GAMES), seed=st.integers(0, 2**31),
       moves=st.lists(st.one_of(st.text(max_size=30), st.none(), st.integers(), st.sampled_from(["1", "call", "bid 2 2", "rock", "continue"])), max_size=12))
def test_fuzzed_learner_moves_never_raise(game, seed, moves):
    env = gymnasium.make(f"{game}-VsScripted-v0")
    env.reset(seed=seed)
    for move in moves:
        obs, reward, terminated, truncated, info = env.step(move)
        assert isinstance(obs, str) and -1.0 <= reward <= 1.0 and isinstance(info["action_valid"], bool)
        if terminated or truncated:
            env.reset()
