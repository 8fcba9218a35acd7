"""``agentgym train`` and ``agentgym quickstart`` wiring (the runs themselves are tested elsewhere)."""

import fnmatch
import tomllib
from pathlib import Path

import pytest

from agentgym_envs.cli.main import main
from trainer.cli.quickstart import QUICKSTART_CONFIG, quickstart_config
from trainer.config import load_config

REPO = Path(__file__).parents[2]


def test_train_runs_a_config_with_overrides_and_reports_held_out_success(tmp_path, tiny_overrides, capsys):
    code = main(["train", "-", *tiny_overrides, "steps=1", "env.max_turns=2", "rollout.tasks_per_step=1",
                 "rollout.group_size=2", "rollout.max_new_tokens=4", "eval.num_tasks=2", "env.eval_kwargs={split: valid_seen}", f"out_dir={tmp_path}"])
    assert code == 0
    assert "held-out success (valid_seen):" in capsys.readouterr().out.splitlines()[-1]
    assert (tmp_path / "metrics.jsonl").exists() and (tmp_path / "checkpoints" / "latest").exists()


def test_train_explains_a_bad_override(capsys):
    assert main(["train", "-", "rollout.group_size=1"]) == 2
    assert "group_size must be >= 2" in capsys.readouterr().err  # a user error: one line on stderr


def test_quickstart_runs_the_shipped_config_with_the_users_overrides(tmp_path):
    """One copy of the settings: the command loads the YAML that ``configs/quickstart.yaml`` links to."""
    assert (REPO / "configs" / "quickstart.yaml").resolve() == QUICKSTART_CONFIG
    shipped = load_config(REPO / "configs" / "quickstart.yaml", [f"out_dir={tmp_path}"])
    assert quickstart_config(str(tmp_path)) == shipped
    assert shipped.env.env_id == "agentgym/Maze-Easy-v0" and shipped.algorithm.estimator == "gigpo_mean"
    changed = quickstart_config(str(tmp_path), ["steps=3", "bc.epochs=1"])
    assert (changed.steps, changed.bc.epochs, changed.rollout.group_size) == (3, 1, shipped.rollout.group_size)


def test_the_quickstart_config_ships_as_package_data():
    """A non-editable install has no ``configs/`` folder: the file must be in the trainer package's data."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["trainer"]
    relative = QUICKSTART_CONFIG.relative_to(REPO / "trainer").as_posix()
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), (relative, patterns)


def test_pass_at_k_is_the_chance_that_some_of_k_tries_at_a_task_wins():
    """Checked against enumerating every k-subset of each task's tries (what the unbiased estimator means)."""
    from itertools import combinations
    from types import SimpleNamespace

    from trainer.cli.quickstart import _passes
    from trainer.collect.episodes import pass_at_k

    wins = {0: [1, 0, 0, 0, 0, 0, 0, 0], 1: [0] * 8, 2: [1, 1, 0, 1, 0, 0, 1, 0], 3: [1] * 8}
    episodes = [SimpleNamespace(task_index=t, won=bool(w), infra_error=None) for t, ws in wins.items() for w in ws]
    episodes.append(SimpleNamespace(task_index=1, won=True, infra_error="worker lost"))  # not counted
    got = pass_at_k(episodes)
    for k in (1, 4, 8):
        by_task = [sum(any(s) for s in combinations(ws, k)) / sum(1 for _ in combinations(ws, k)) for ws in wins.values()]
        assert got[k] == pytest.approx(sum(by_task) / len(by_task)), k
    assert got[1] == pytest.approx((1 / 8 + 0 + 4 / 8 + 1) / 4) and got[8] == pytest.approx(3 / 4)
    assert set(pass_at_k(episodes[:-9])) == {1, 4, 8} and 8 not in pass_at_k(episodes[:4] + episodes[8:12])
    assert _passes({"eval_success": 0.5, "eval_pass@1": 0.5, "eval_pass@4": 0.75}) == "pass@1/4 0.500/0.750"
    assert _passes({"eval_success": 0.5}) == ""
