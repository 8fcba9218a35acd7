"""``agentgym train`` and ``agentgym quickstart`` wiring (the runs themselves are tested elsewhere)."""

import fnmatch
import tomllib
from pathlib import Path

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
