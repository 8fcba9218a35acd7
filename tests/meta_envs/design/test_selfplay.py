"""The self-play loop (meta_envs/design/selfplay.py) and ``agentgym selfplay``: advantages, report, roles,
end-to-end rounds on EnvDesign-v0 with scripted designers, and one trainer step on each role's env."""

from __future__ import annotations

import json
import math

import pytest

from agentgym_envs.cli.main import main
from meta_envs.design.selfplay import (SelfPlayConfig, SelfPlayError, difficulty_spread, group_advantages,
                                       summarise, win_advantages)


def test_group_advantages_are_normalised_and_leave_infra_out():
    rewards = [0.8, -0.5, 0.2, None, -1.0]
    adv = group_advantages(rewards)
    assert adv[3] is None
    scored = [a for a in adv if a is not None]
    assert abs(sum(scored)) < 1e-5
    assert abs(math.sqrt(sum(a * a for a in scored) / len(scored)) - 1.0) < 1e-4
    assert adv[0] > adv[2] > adv[1] > adv[4]  # the order of the rewards is kept
    assert group_advantages([0.3, 0.3, None]) == [0.0, 0.0, None]  # no spread: no signal
    assert group_advantages([None, None]) == [None, None]


def test_win_advantages_are_the_normalised_binary_outcomes():
    for p in (0.125, 0.5, 0.875):
        adv = win_advantages(p)
        assert abs(p * adv["win"] + (1 - p) * adv["loss"]) < 1e-5  # zero mean over the k plays
        assert abs(p * adv["win"] ** 2 + (1 - p) * adv["loss"] ** 2 - 1.0) < 1e-4  # unit spread
    assert win_advantages(0.0) == {"win": 0.0, "loss": 0.0}


def test_difficulty_spread_bins_and_quantiles():
    spread = difficulty_spread([0.1, 0.45, 0.5, 0.55, 0.95])
    assert spread["histogram"] == [1, 0, 3, 0, 1] and spread["n"] == 5
    assert spread["min"] == 0.1 and spread["median"] == 0.5 and spread["max"] == 0.95
    assert difficulty_spread([0.6])["histogram"] == [0, 0, 0, 1, 0]  # 0.6 opens the fourth bin
    assert difficulty_spread([1.0])["histogram"] == [0, 0, 0, 0, 1]


def test_summarise_reads_the_first_failed_gate_and_the_components():
    info = {"outcome": "gate", "sha256": "ab" * 32, "S": 1.0, "B": None, "dup": 0.0, "p_hat": 0.5,
            "gates": [{"name": "parse", "passed": True}, {"name": "expert", "passed": False},
                      {"name": "baselines", "passed": False}]}
    sample = summarise(0, -0.5, info, 1)
    assert sample.failed_gate == "expert" and sample.outcome == "gate"
    assert sample.components == {"S": 1.0, "dup": 0.0, "p_hat": 0.5}  # None components are left out


@pytest.mark.parametrize("field,value,match", [("k", 4, "k must be >= 8"), ("rounds", 0, "rounds must be >= 1"),
                                               ("group_size", 0, "group_size must be >= 1")])
def test_config_refuses_what_cannot_be_scored(field, value, match, tmp_path):
    with pytest.raises(SelfPlayError, match=match):
        SelfPlayConfig(archive=str(tmp_path), **{field: value})


def test_the_command_reports_bad_roles_and_kwargs(tmp_path, capsys):
    assert main(["selfplay", "--archive", str(tmp_path), "--solver", "expert"]) == 2
    assert "expected random or a model SPEC" in capsys.readouterr().out
    assert main(["selfplay", "--archive", str(tmp_path), "--env-kwargs", "[1]"]) == 2
    assert "expected a JSON object" in capsys.readouterr().out
    assert main(["selfplay", "--archive", str(tmp_path), "--env", "agentgym/EnvDesing-v0"]) == 2
    assert "No env registered as 'agentgym/EnvDesing-v0'" in capsys.readouterr().out
