"""``agentgym train`` and ``agentgym quickstart`` wiring (the runs themselves are tested elsewhere)."""

from pathlib import Path

from agentgym_envs.cli.main import main
from trainer.cli.quickstart import QUICKSTART
from trainer.config import load_config

REPO = Path(__file__).parents[2]


def test_train_runs_a_config_with_overrides_and_reports_held_out_success(tmp_path, tiny_overrides, capsys):
    code = main(["train", "-", *tiny_overrides, "steps=1", "env.max_turns=2", "rollout.tasks_per_step=1",
                 "rollout.group_size=2", "rollout.max_new_tokens=4", "eval.num_tasks=2", f"out_dir={tmp_path}"])
    assert code == 0
    assert "held-out success (valid_seen):" in capsys.readouterr().out.splitlines()[-1]
    assert (tmp_path / "metrics.jsonl").exists() and (tmp_path / "checkpoints" / "latest").exists()


def test_train_explains_a_bad_override(capsys):
    assert main(["train", "-", "rollout.group_size=1"]) == 2
    assert "group_size must be >= 2" in capsys.readouterr().out


def test_quickstart_settings_match_the_shipped_config():
    shipped = load_config(REPO / "configs" / "quickstart.yaml")
    assert load_config(None, QUICKSTART + [f"out_dir={shipped.out_dir}"]) == shipped
