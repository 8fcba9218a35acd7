"""The designer's reward (meta_envs/design/reward.py): every outcome and the formula, computed by hand."""

from __future__ import annotations

import json

import pytest

from meta_envs.design.reward import (PlayStats, RewardInputError, designer_reward, hint_regret, plateau,
                                     skill_dependence)


@pytest.mark.parametrize("p, expected", [(0.0, 0.0), (0.15, 0.0), (0.2, 0.2), (0.4, 1.0), (0.5, 1.0),
                                         (0.6, 1.0), (0.7, 0.6), (0.85, 0.0), (1.0, 0.0)])
def test_plateau_is_one_on_the_middle_and_falls_over_a_quarter(p, expected):
    assert plateau(p) == pytest.approx(expected, abs=1e-9)


def test_fixed_outcomes():
    assert designer_reward("unparseable")[0] == -1.0
    assert designer_reward("schema")[0] == -1.0
    assert designer_reward("gate")[0] == -0.5
    reward, components = designer_reward("infra")
    assert reward == 0.0 and components["outcome"] == "infra" and components["S"] is None


def test_formula_by_hand():
    # S = (0.7 - 0.1)/0.5 -> clipped 1; B(0.3) = 1 - 0.1/0.25 = 0.6; R = (0.42 - 0.3)/0.15 = 0.8
    # r = 1 * (0.6*0.6 + 0.4*0.8) * (1 - 0.25) = (0.36 + 0.32) * 0.75 = 0.51
    reward, c = designer_reward("ok", PlayStats(p_solver=0.3, n=8, p_hint=0.42, p_expert_eps=0.7,
                                                p_random=0.1), dup=0.25)
    assert reward == pytest.approx(0.51)
    assert (c["S"], c["B"], c["R_hint"], c["dup"], c["p_hat"]) == pytest.approx((1.0, 0.6, 0.8, 0.25, 0.3))
    assert c["reward"] == reward and c["n"] == 8
    json.dumps(c)


def test_skill_dependence_scales_the_reward():
    # S = (0.45 - 0.2)/0.5 = 0.5; B(0.5) = 1; no hint -> r = 0.5 * 0.6 = 0.3
    reward, c = designer_reward("ok", PlayStats(0.5, 8, None, 0.45, 0.2))
    assert c["S"] == pytest.approx(0.5) and c["R_hint"] == 0.0
    assert reward == pytest.approx(0.3)


def test_coin_flip_earns_nothing_even_at_p_half():
    """The bimodal hack: a game that is pure chance sits at p_hat = 0.5 but the expert is no better."""
    reward, c = designer_reward("ok", PlayStats(0.5, 16, 0.5, 0.5, 0.5))
    assert c["B"] == 1.0 and c["S"] == 0.0 and reward == 0.0


def test_duplicate_is_cut_and_extremes_earn_nothing_without_hint_regret():
    good = PlayStats(0.5, 8, 0.5, 0.9, 0.0)
    assert designer_reward("ok", good)[0] == pytest.approx(0.6)
    assert designer_reward("ok", good, dup=1.0)[0] == 0.0
    for p in (0.0, 1.0):
        assert designer_reward("ok", PlayStats(p, 8, p, 0.9, 0.0))[0] == 0.0


def test_hint_regret_and_skill_helpers():
    assert hint_regret(0.2, 0.35) == pytest.approx(1.0)
    assert hint_regret(0.6, 0.4) == 0.0
    assert skill_dependence(0.1, 0.3) == 0.0


@pytest.mark.parametrize("kwargs, match", [
    ({"p_solver": 1.5}, "p_solver: expected a share in"),
    ({"n": 4}, "expected at least 8 plays"),
    ({"p_hint": -0.1}, "p_hint: expected a share"),
    ({"p_random": float("nan")}, "p_random: expected a share"),
])
def test_bad_inputs_are_our_errors(kwargs, match):
    base = dict(p_solver=0.5, n=8, p_hint=None, p_expert_eps=1.0, p_random=0.0)
    with pytest.raises(RewardInputError, match=match):
        PlayStats(**{**base, **kwargs})


def test_bad_outcome_dup_and_missing_stats():
    with pytest.raises(RewardInputError, match="outcome: expected one of"):
        designer_reward("great")  # type: ignore[arg-type]
    with pytest.raises(RewardInputError, match="dup: expected a share"):
        designer_reward("gate", dup=2.0)
    with pytest.raises(RewardInputError, match="expected PlayStats, got None"):
        designer_reward("ok")
