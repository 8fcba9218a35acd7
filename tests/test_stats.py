"""The project's one home for 95% intervals: the normal and Wilson intervals agree with their formulas."""

from __future__ import annotations

import math

import pytest

from agentgym_envs.stats import Z95, mean_ci, normal_half_width, wilson


def test_normal_half_width_is_the_wald_interval():
    assert normal_half_width(0.5, 100) == pytest.approx(Z95 * 0.05)
    assert normal_half_width(0.2, 25) == pytest.approx(1.96 * math.sqrt(0.2 * 0.8 / 25), rel=1e-4)
    assert normal_half_width(0.0, 10) == normal_half_width(1.0, 10) == 0.0  # why leaderboards use Wilson
    assert normal_half_width(0.5, 0) == 0.0


def test_wilson_stays_inside_zero_one_and_is_wider_than_zero_at_the_ends():
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_mean_ci_uses_the_sample_std():
    mean, half = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and half == pytest.approx(Z95 * math.sqrt(5 / 3) / 2)
    assert mean_ci([7.0]) == (7.0, 0.0) and mean_ci([]) == (0.0, 0.0)
