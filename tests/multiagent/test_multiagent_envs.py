"""Every registered multi-agent game: PettingZoo's own API tests, full legal games, determinism, fuzzing and
the illegal-move rule. Registering a game (``register_multi``) enrols it here.

PettingZoo's ``api_test`` assumes numpy observations in one helper: ``_test_observation_space_compatibility``
compares ``space.dtype`` with ``observation.dtype``, and a ``str`` has no ``dtype``. We run ``api_test``
unchanged except for that helper, replaced (for the test only) by the equivalent check for text spaces: the
observation is a ``str`` (``space.contains`` is already asserted by ``api_test`` itself). Its other
numpy-minded checks only warn ("Observation is not a NumPy array", "... should be Box or Discrete").

``api_test`` samples actions from the action space: random strings, i.e. illegal moves, so its play test
ends at the first move by the forfeit rule. We therefore run it twice: as is, and with an action space
whose ``sample()`` draws a legal move (test-only), so PettingZoo's play test also walks a complete game.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest
from gymnasium.spaces import Text
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test
from pettingzoo.utils.conversions import parallel_to_aec

import agentgym_envs
from agentgym_envs.checker import same
from agentgym_envs.core.spaces import UnicodeText
from agentgym_envs.fuzz import hostile_actions
from agentgym_envs.games.multiagent.aec import MAX_ACTION_CHARS
from agentgym_envs.games.multiagent.rps import parallel_env

api_test_module = importlib.import_module("pettingzoo.test.api_test")  # the package re-exports the function under this name
MULTI_IDS = agentgym_envs.multi_ids()
STANDARD_KEYS = {"valid_actions", "action_valid", "parse_error", "won", "score", "state_key", "view", "instruction", "system_prompt"}


@pytest.fixture
def text_space_api_test(monkeypatch):
    original = api_test_module._test_observation_space_compatibility

    def compatible(expected, seen, recursed_keys):
        if isinstance(expected, Text):
            assert isinstance(seen, str), f"observation for a Text space should be a str, got {type(seen).__name__}"
        else:
            original(expected, seen, recursed_keys)

    monkeypatch.setattr(api_test_module, "_test_observation_space_compatibility", compatible)
    return api_test


class LegalMoveSampler(UnicodeText):
    """Test-only action space: ``sample()`` returns a legal move of the agent to act."""

    def __init__(self, env):
        super().__init__(MAX_ACTION_CHARS, seed=0)
        self.env = env

    def sample(self, mask=None, probability=None):
        legal = self.env.infos[self.env.agent_selection]["valid_actions"]
        return legal[int(self.np_random.integers(len(legal)))] if legal else super().sample()


def with_legal_sampling(env):
    sampler = LegalMoveSampler(env)
    env.action_space = lambda agent: sampler
    return env


def play_random_game(env, seed: int, rng: np.random.Generator) -> list:
    """Play one game with random legal moves, checking AEC bookkeeping; returns everything seen."""
    env.reset(seed=seed)
    seen, totals = [], dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter(10_000):
        obs, reward, terminated, truncated, info = env.last()
        assert isinstance(obs, str) and env.observation_space(agent).contains(obs)
        assert STANDARD_KEYS <= set(info), f"{agent} info lacks {STANDARD_KEYS - set(info)}"
        seen.append((agent, obs, reward, terminated, truncated, info))
        if terminated or truncated:
            action = None
        else:
            legal = info["valid_actions"]
            assert legal and agent == env.agent_selection
            action = legal[int(rng.integers(len(legal)))]
        env.step(action)
        for a, r in env.rewards.items():
            totals[a] += r
    assert not env.agents
    assert all(-1.0 <= r <= 1.0 for r in totals.values()) and abs(sum(totals.values())) < 1e-9, totals
    return seen + [totals]


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_pettingzoo_api_test(env_id, text_space_api_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy-minded advice for Box/Discrete spaces
        text_space_api_test(agentgym_envs.make_multi(env_id), num_cycles=200)
        text_space_api_test(with_legal_sampling(agentgym_envs.make_multi(env_id)), num_cycles=200)


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_pettingzoo_seed_test(env_id):
    seed_test(lambda: agentgym_envs.make_multi(env_id), num_cycles=50)
    seed_test(lambda: with_legal_sampling(agentgym_envs.make_multi(env_id)), num_cycles=50)


def test_parallel_rps_passes_parallel_api_test():
    parallel_api_test(parallel_env(rounds=5), num_cycles=100)
    parallel_seed_test(lambda: parallel_env(rounds=5), num_cycles=20)


def test_parallel_rps_through_parallel_to_aec_passes_api_test(text_space_api_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text_space_api_test(parallel_to_aec(parallel_env(rounds=3)), num_cycles=50)


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_random_legal_games_complete_with_zero_sum_bounded_rewards(env_id):
    env, rng = agentgym_envs.make_multi(env_id), np.random.default_rng(0)
    for seed in range(15):
        play_random_game(env, seed, rng)


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_same_seed_same_moves_same_everything(env_id):
    a, b = agentgym_envs.make_multi(env_id), agentgym_envs.make_multi(env_id)
    for seed in (0, 1, 7):
        assert same(play_random_game(a, seed, np.random.default_rng(seed)), play_random_game(b, seed, np.random.default_rng(seed)))


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_rules_are_explained_on_reset(env_id):
    env = agentgym_envs.make_multi(env_id)
    env.reset(seed=0)
    for agent in env.agents:
        assert len(env.infos[agent]["instruction"]) > 100 and "illegal" in env.infos[agent]["instruction"].lower()
        assert env.infos[agent]["system_prompt"]
    assert "Legal moves" in env.observe(env.agent_selection)


@pytest.mark.parametrize("env_id", MULTI_IDS)
@pytest.mark.parametrize("bad", [None, "", "   ", 42, "x" * 20_000, b"\xff", "definitely not a move", ["rock"]])
def test_illegal_move_forfeits(env_id, bad):
    env = agentgym_envs.make_multi(env_id)
    env.reset(seed=3)
    offender = env.agent_selection
    other = next(a for a in env.agents if a != offender)
    env.step(bad)
    assert env.terminations[offender] and env.terminations[other]
    assert env.rewards[offender] == -1.0 and env.rewards[other] == 1.0
    info = env.infos[offender]
    assert info["action_valid"] is False and info["parse_error"] and not info["won"]
    assert env.infos[other]["won"] and env.infos[other]["action_valid"]
    assert "illegal move" in env.observe(offender) and "You lost" in env.observe(offender)
    assert "You won" in env.observe(other)


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_hostile_actions_never_raise(env_id):
    env = agentgym_envs.make_multi(env_id)
    for action in hostile_actions():
        env.reset(seed=1)
        env.step(action)
        assert isinstance(env.observe(env.agent_selection), str)
        while env.agents:  # finished agents step with anything, even hostile input
            env.step(action)


@pytest.mark.parametrize("env_id", MULTI_IDS)
@settings(max_examples=40)
@given(moves=st.lists(st.one_of(st.text(max_size=40), st.integers(), st.none(), st.binary(max_size=8),
                                st.sampled_from(["1", "5", "check", "bet", "call", "fold", "raise", "liar", "bid 2 3",
                                                 "rock", "paper", "scissors", " 4 ", "Column 3", "bid 1 6."])),
                      max_size=30))
def test_fuzzed_move_sequences_never_raise(env_id, moves):
    env = agentgym_envs.make_multi(env_id)
    env.reset(seed=5)
    for move in moves:
        if not env.agents:
            env.reset(seed=5)
        env.step(move)
        if not env.agents:
            continue
        obs, reward, terminated, truncated, info = env.last()
        assert isinstance(obs, str) and -1.0 <= reward <= 1.0 and isinstance(info["action_valid"], bool)


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_state_key_is_per_information_set(env_id):
    env = agentgym_envs.make_multi(env_id)
    env.reset(seed=2)
    keys = {a: env.infos[a]["state_key"] for a in env.agents}
    assert len(set(keys.values())) == len(keys), "different seats know different things, so their keys differ"
    other = agentgym_envs.make_multi(env_id)
    other.reset(seed=2)
    assert keys == {a: other.infos[a]["state_key"] for a in other.agents}


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_ansi_render_is_the_current_agents_view(env_id):
    env = agentgym_envs.make_multi(env_id, render_mode="ansi")
    env.reset(seed=0)
    assert env.render() == env.observe(env.agent_selection)
    with pytest.raises(ValueError, match="render_mode must be one of"):
        agentgym_envs.make_multi(env_id, render_mode="rgb_array")


def test_step_before_reset_is_a_programming_error():
    env = agentgym_envs.make_multi("agentgym/TicTacToe-v0")
    with pytest.raises(agentgym_envs.core.ResetNeeded, match="reset"):
        env.step("5")


def test_make_multi_suggests_close_ids():
    with pytest.raises(agentgym_envs.core.UnknownEnvError, match="TicTacToe-v0"):
        agentgym_envs.make_multi("agentgym/TicTacToe-v1")
