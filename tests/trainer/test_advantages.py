"""Every advantage estimator on a small example computed by hand."""

import math

import pytest
import torch

from trainer.learn.algorithms import (CRITIC_ESTIMATORS, ESTIMATORS, AdvantageSettings, discounted_returns, estimate, gae_advantages, gigpo_advantages, group_by,
                                grpo_advantages, reinforce_pp_advantages, rloo_advantages, step_group_advantages,
                                token_advantages)
from trainer.collect.trajectory import Trajectory


def test_grpo_normalises_by_group_std_and_dr_grpo_does_not():
    r = torch.tensor([[1.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    # group 0: mean 0.25, unbiased std sqrt(0.25) = 0.5
    expected = torch.tensor([[1.5, -0.5, -0.5, -0.5], [0.0, 0.0, 0.0, 0.0]])
    torch.testing.assert_close(grpo_advantages(r, eps=0.0)[:1], expected[:1])
    torch.testing.assert_close(grpo_advantages(r)[1], expected[1])
    torch.testing.assert_close(grpo_advantages(r, normalize_std=False), torch.tensor([[0.75, -0.25, -0.25, -0.25], [0.0] * 4]))


def test_rloo_uses_the_mean_of_the_others():
    r = torch.tensor([[3.0, 1.0, 2.0]])
    torch.testing.assert_close(rloo_advantages(r), torch.tensor([[1.5, -1.5, 0.0]]))  # 3-(1+2)/2, 1-(3+2)/2, 2-(3+1)/2
    with pytest.raises(ValueError, match="at least 2 rollouts"):
        rloo_advantages(torch.tensor([[1.0]]))


def test_reinforce_pp_uses_global_batch_std():
    r = torch.tensor([[1.0, 0.0], [3.0, 1.0]])
    # group means 0.5 and 2 -> centred [0.5, -0.5, 1, -1]; unbiased std over 4 = sqrt(2.5/3)
    std = math.sqrt(2.5 / 3)
    expected = torch.tensor([[0.5, -0.5], [1.0, -1.0]]) / std
    torch.testing.assert_close(reinforce_pp_advantages(r, eps=0.0), expected)
    # without the group baseline: the batch mean 1.25 is subtracted
    centred = torch.tensor([[-0.25, -1.25], [1.75, -0.25]])
    torch.testing.assert_close(reinforce_pp_advantages(r, group_baseline=False, eps=0.0), centred / centred.std())


def test_gae_matches_a_hand_unrolled_recursion():
    rewards, values = torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0.2, 0.4, 0.6])
    gamma, lam = 0.9, 0.8
    d2 = 1.0 - 0.6  # terminal: V(s_3) = 0
    d1 = 0.0 + 0.9 * 0.6 - 0.4
    d0 = 0.0 + 0.9 * 0.4 - 0.2
    a2 = d2
    a1 = d1 + gamma * lam * a2
    a0 = d0 + gamma * lam * a1
    adv, ret = gae_advantages(rewards, values, gamma=gamma, lam=lam)
    torch.testing.assert_close(adv, torch.tensor([a0, a1, a2]))
    torch.testing.assert_close(ret, torch.tensor([a0 + 0.2, a1 + 0.4, a2 + 0.6]))


def test_gigpo_combines_episode_and_anchor_state_groups():
    # Two rollouts of one task. Both start in state A. Rollout 0 goes A -> B -> win; rollout 1: A -> A -> lose.
    rewards = [[0.0, 1.0], [0.0, 0.0]]
    keys = [["A", "B"], ["A", "A"]]
    assert discounted_returns(rewards[0], 0.5) == [0.5, 1.0]
    # Step groups: A holds (0,0) with return 0.5, (1,0) with 0, (1,1) with 0 -> mean 1/6; B is alone -> 0.
    step = step_group_advantages([[0.5, 1.0], [0.0, 0.0]], keys, normalize_std=False)
    assert sum(step, []) == pytest.approx([0.5 - 1 / 6, 0.0, -1 / 6, -1 / 6])
    # Episode advantages (mean only): +0.5 and -0.5; omega = 2 weighs the step term.
    out = gigpo_advantages(rewards, keys, gamma=0.5, omega=2.0, normalize_std=False)
    assert sum(out, []) == pytest.approx([0.5 + 2 * (1 / 3), 0.5, -0.5 - 2 / 6, -0.5 - 2 / 6])


def _trajectory(group, rewards, keys=None):
    turns = [k for k in range(len(rewards)) for _ in range(2)]
    n = len(turns) + 3
    return Trajectory(list(range(n)), [0] * 3 + [1] * len(turns), [0.0] * n, [-1] * 3 + turns, 3,
                      rewards=list(rewards), state_keys=keys or [f"s{k}" for k in range(len(rewards))], group=group)


def test_registry_spreads_turn_advantages_over_each_turns_tokens():
    trajectories = [_trajectory(0, [0.0, 1.0]), _trajectory(0, [0.0]), _trajectory(1, [1.0]), _trajectory(1, [1.0])]
    groups = group_by(trajectories)
    assert [len(g) for g in groups] == [2, 2]
    per_turn = estimate("dr_grpo", groups)
    assert per_turn == [[[0.5, 0.5], [-0.5]], [[0.0], [0.0]]]
    assert token_advantages(groups[0][0], per_turn[0][0]) == [0.0] * 3 + [0.5] * 4
    for t in trajectories:
        t.turn_values = [0.0] * t.num_turns
    for name in ESTIMATORS:  # every estimator runs on the same groups and returns one number per turn
        shapes = [[len(a) for a in g] for g in estimate(name, groups)]
        assert shapes == [[2, 1], [1, 1]], name
    with pytest.raises(ValueError, match="unknown advantage estimator 'ppo'"):
        estimate("ppo", groups)


def test_ppo_gae_runs_gae_over_turns_from_the_critics_values():
    t = _trajectory(0, [0.0, 1.0])
    with pytest.raises(ValueError, match="needs the critic's turn_values"):
        estimate("ppo_gae", [[t]])
    t.turn_values = [0.5, 0.25]
    # gamma = 1, lambda = 0.5: delta_1 = 1 - 0.25 = 0.75, delta_0 = 0 + 0.25 - 0.5 = -0.25, A_0 = -0.25 + 0.5 * 0.75
    out = estimate("ppo_gae", [[t]], AdvantageSettings(gamma=1.0, gae_lambda=0.5))
    assert out[0][0] == pytest.approx([0.125, 0.75])
    assert CRITIC_ESTIMATORS == {"ppo_gae"}
