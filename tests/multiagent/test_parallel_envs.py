"""``make_multi(id, parallel=True)``: the Parallel form of every simultaneous-move game, checked by PettingZoo's own
``parallel_api_test``; a turn-based game says it has none (PettingZoo's Parallel API needs every agent to act at
each step, so ``aec_to_parallel`` does not apply to it)."""

from __future__ import annotations

import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test
from pettingzoo.utils.env import ParallelEnv

from agentgym_envs import make_multi, multi_ids

SIMULTANEOUS = {"agentgym/RockPaperScissors-v0"}


def test_every_simultaneous_game_has_a_parallel_env_that_passes_parallel_api_test():
    for id in sorted(SIMULTANEOUS):
        env = make_multi(id, parallel=True)
        assert isinstance(env, ParallelEnv) and env.metadata["is_parallelizable"], id
        parallel_api_test(env, num_cycles=100)
        parallel_seed_test(lambda: make_multi(id, parallel=True), num_cycles=20)


def test_rps_parallel_takes_make_kwargs_and_plays_a_round():
    env = make_multi("agentgym/RockPaperScissors-v0", parallel=True, rounds=1)
    observations, _ = env.reset(seed=3)
    assert set(observations) == {"player_0", "player_1"}
    _, rewards, terminations, _, _ = env.step({"player_0": "rock", "player_1": "scissors"})
    assert rewards == {"player_0": 1.0, "player_1": -1.0} and all(terminations.values())


@pytest.mark.parametrize("id", sorted(set(multi_ids()) - SIMULTANEOUS))
def test_a_turn_based_game_says_it_has_no_parallel_form(id):
    assert not make_multi(id).metadata["is_parallelizable"]
    with pytest.raises(ValueError, match="is turn-based: PettingZoo's Parallel API needs every agent to act"):
        make_multi(id, parallel=True)
