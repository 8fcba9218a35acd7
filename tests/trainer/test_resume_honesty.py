"""A run resumes only under the config it was written with, unless the user forces it (``--resume``)."""

import logging

import pytest

from agentgym_envs.cli.main import main
from trainer.run.checkpoint import ABSENT, config_differences
from trainer.config import TrainConfig, load_config, to_dict
from trainer.errors import CheckpointError
from trainer.run.log import read_jsonl
from trainer import Trainer, fit

RUN = ["rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=4", "env.max_turns=2",
       "eval.num_tasks=1", "optim.lr=0.001", "checkpoint_every=1"]


def _fit(overrides, out_dir, **kw):
    trainer = Trainer(load_config(None, overrides + [f"out_dir={out_dir}"]))
    try:
        return trainer, fit(trainer, echo=None, **kw)
    finally:
        trainer.close()


@pytest.fixture()
def one_step_run(tmp_path, tiny_overrides):
    """A run in ``tmp_path`` checkpointed after step 1 of 2 (a "killed" run)."""
    base = tiny_overrides + RUN + ["steps=2"]
    _fit(base, tmp_path, stop_after=1)
    return base, tmp_path


def test_the_same_config_resumes_and_continues_the_step(one_step_run):
    base, out = one_step_run
    trainer, records = _fit(base, out)
    assert trainer.step == 2 and [r["step"] for r in records] == [2]
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2]


def test_changing_only_steps_extends_the_run(one_step_run):
    base, out = one_step_run
    trainer, records = _fit(base + ["steps=3", "checkpoint_every=2", "eval.every=5"], out)
    assert trainer.step == 3 and [r["step"] for r in records] == [2, 3]


@pytest.mark.parametrize("change, key, was, now", [
    (["optim.lr=0.01"], "optim.lr", "0.001", "0.01"),
    (["env.env_id=agentgym/Household-PickTwo-v0"], "env.env_id", "'agentgym/Household-PickPlace-v0'",
     "'agentgym/Household-PickTwo-v0'"),
])
def test_a_changed_key_is_refused_naming_the_key_and_both_values(one_step_run, change, key, was, now):
    base, out = one_step_run
    with pytest.raises(CheckpointError) as caught:
        _fit(base + change, out)
    message = str(caught.value)
    assert f"{key}: expected {was} (the checkpoint's), got {now}" in message
    assert "new out_dir" in message and "--resume" in message
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1]  # nothing trained, nothing lost


def test_two_changed_keys_are_both_named(one_step_run):
    base, out = one_step_run
    with pytest.raises(CheckpointError, match=r"loss\.kl_coef: expected 0\.0 .*optim\.lr: expected 0\.001"):
        _fit(base + ["optim.lr=0.01", "loss.kl_coef=0.5"], out)


def test_resume_true_forces_a_changed_config_and_logs_the_differences(one_step_run, caplog):
    base, out = one_step_run
    with caplog.at_level(logging.WARNING, logger="trainer.run.loop"):
        trainer, records = _fit(base + ["optim.lr=0.01", "resume=true"], out)
    assert trainer.step == 2 and [r["step"] for r in records] == [2]
    assert "optim.lr: expected 0.001 (the checkpoint's), got 0.01" in caplog.text
    # the checkpoint now carries the new config: the same command resumes without forcing
    again = Trainer(load_config(None, base + ["optim.lr=0.01", f"out_dir={out}"]))
    try:
        assert again.resume() and again.step == 2
    finally:
        again.close()


def test_a_fresh_out_dir_trains_from_step_zero(tmp_path, tiny_overrides):
    trainer, records = _fit(tiny_overrides + RUN + ["steps=1"], tmp_path / "new")
    assert trainer.step == 1 and [r["step"] for r in records] == [1]


def test_cli_refuses_a_changed_config_and_resume_forces_it(one_step_run, capsys):
    base, out = one_step_run
    argv = ["train", "-", *base, f"out_dir={out}", "optim.lr=0.01"]
    assert main(argv) == 2
    said = capsys.readouterr().err  # user errors: one line on stderr
    assert "agentgym train:" in said and "optim.lr: expected 0.001 (the checkpoint's), got 0.01" in said
    assert main(argv + ["--resume"]) == 0
    assert "held-out success" in capsys.readouterr().out
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2]


def test_a_key_older_checkpoints_lack_counts_as_its_default():
    saved, current = to_dict(TrainConfig()), to_dict(TrainConfig())
    del saved["optim"]["warmup_steps"]
    assert config_differences(saved, current, to_dict(TrainConfig())) == {}
    current["optim"]["warmup_steps"] = 3
    assert config_differences(saved, current, to_dict(TrainConfig())) == {"optim.warmup_steps": (0, 3)}
    saved["gone"] = 1
    assert config_differences(saved, current)["gone"] == (1, ABSENT)
