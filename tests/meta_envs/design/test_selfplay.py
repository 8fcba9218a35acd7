"""The self-play loop (meta_envs/design/selfplay.py) and ``agentgym selfplay``: advantages, report, roles,
end-to-end rounds on EnvDesign-v0 with scripted designers, and one trainer step on each role's env."""

from __future__ import annotations

import json
import math

import pytest

from agentgym_envs.cli.main import main
from meta_envs.design.selfplay import SelfPlayConfig, SelfPlayError, difficulty_spread, group_advantages, summarise


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
    assert main(["selfplay", "--archive", str(tmp_path), "--solver", "gpt-4"]) == 2
    assert "unknown policy spec 'gpt-4'" in capsys.readouterr().out
    assert main(["selfplay", "--archive", str(tmp_path), "--env-kwargs", "[1]"]) == 2
    assert "expected a JSON object" in capsys.readouterr().out
    assert main(["selfplay", "--archive", str(tmp_path), "--env", "agentgym/EnvDesing-v0"]) == 2
    assert "No env registered as 'agentgym/EnvDesing-v0'" in capsys.readouterr().out


# --- one trainer step on each role's env, with the tiny model -------------------------------------------

#: As tests/trainer/conftest.py's TINY_TEST_OVERRIDES (tests are not importable across folders).
TINY = ["policy.tiny.corpus_episodes=40", "policy.tiny.model.hidden_size=64", "policy.tiny.model.num_heads=1",
        "policy.tiny.model.num_layers=1", "policy.tiny.model.intermediate_size=128", "env.system_prompt=''",
        "progress=false"]
ONE_STEP = ["steps=1", "rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=8",
            "bc.episodes=0", "eval.num_tasks=1", "eval.every=0", "checkpoint_every=0", "env.train_tasks=1",
            "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01"]


def train_one_step(overrides: list[str], out_dir, cache) -> dict:
    """``agentgym train - … steps=1`` in-process; the one step's logged record."""
    assert main(["train", "-", *TINY, f"policy.cache_dir={cache}", *ONE_STEP, *overrides, f"out_dir={out_dir}"]) == 0
    records = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1], records
    record = records[0]
    assert math.isfinite(record["reward"]) and math.isfinite(record["loss"]), record
    assert record["infra_errors"] == 0 and record["updated"] == 1.0, record
    return record


def test_agentgym_train_trains_the_designer_on_env_design(tmp_path):
    record = train_one_step(["env.env_id=agentgym/EnvDesign-v0", "env.max_turns=1",
                             "rollout.max_context_tokens=8192"], tmp_path / "designer", tmp_path / "cache")
    assert record["reward"] == -1.0, record  # eight tiny tokens are no module: unparseable, -1


def test_agentgym_train_trains_the_solver_on_generated_envs(tmp_path):
    record = train_one_step(["env.env_id=agentgym/Generated-v0", "env.max_turns=2",
                             "rollout.max_context_tokens=2048"], tmp_path / "solver", tmp_path / "cache")
    assert -1.0 <= record["reward"] <= 1.0, record
