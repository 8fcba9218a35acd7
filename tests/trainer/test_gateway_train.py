"""``rollout.source=gateway``: the example harness (a plain ``openai`` client ReAct loop, examples/gateway_react.py,
started by the trainer as a subprocess) trains the tiny policy 3 steps through the gateway, on-policy."""

import sys
from pathlib import Path

import pytest
import torch

from trainer.config import load_config
from trainer.errors import TrainerError
from trainer import Trainer, fit

EXAMPLE = Path(__file__).parents[2] / "examples" / "gateway_react.py"


def _train(tmp_path, overrides, steps):
    config = load_config(None, [*overrides, f"steps={steps}", "env.max_turns=2", "rollout.tasks_per_step=2",
                                "rollout.group_size=2", "rollout.max_new_tokens=6", "bc.episodes=0", "eval.every=0",
                                "checkpoint_every=0", "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01",
                                "rollout.source=gateway", "gateway.step_timeout_s=60",
                                f"gateway.harness={sys.executable} {EXAMPLE} --workers 2", f"out_dir={tmp_path}"])
    trainer = Trainer(config)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    try:
        records = fit(trainer, echo=None)
        harness = trainer._gateway.harness
    finally:
        trainer.close()
    assert harness.returncode == 0  # the harness saw 410 after the last step and exited by itself
    return trainer, before, records


def test_the_example_harness_trains_three_steps_through_the_gateway(tmp_path, tiny_overrides):
    trainer, before, records = _train(tmp_path, tiny_overrides, 3)
    assert [r["step"] for r in records] == [1, 2, 3]
    for r in records:
        assert r["infra_errors"] == 0 and r["turns"] > 0 and r["train_tokens"] > 0
        assert r["logprob_gap_max"] < 1e-4, r  # the gateway's recorded log-probs are the trainer's
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, trainer.model.parameters()))


def test_an_env_driven_gateway_trains_on_the_envs_rewards(tmp_path, tiny_overrides):
    """The gateway steps the env with each sampled reply; the harness only relays the chat (and cannot post rewards)."""
    _, _, records = _train(tmp_path, [*tiny_overrides, "gateway.env_driven=true", "env.dense_reward=true",
                                      "rollout.invalid_penalty=0.5"], 1)
    assert records[0]["infra_errors"] == 0 and records[0]["logprob_gap_max"] < 1e-4
    assert records[0]["reward"] < 0  # the tiny model's random replies are invalid actions: the env's penalty, per turn


def _trainer(tmp_path, overrides):
    return Trainer(load_config(None, [*overrides, "steps=1", "env.max_turns=2", "rollout.tasks_per_step=2",
                                      "rollout.group_size=2", "rollout.max_new_tokens=6", "bc.episodes=0",
                                      "eval.every=0", "checkpoint_every=0", "rollout.source=gateway", f"out_dir={tmp_path}"]))


def test_a_step_without_sessions_counts_its_rollouts_lost_and_a_dead_harness_stops_training(tmp_path, tiny_overrides):
    trainer = _trainer(tmp_path / "a", [*tiny_overrides, "gateway.step_timeout_s=0.5"])  # no harness: nobody comes
    try:
        record = trainer.train_step()
    finally:
        trainer.close()
    assert record["infra_errors"] == 4 and record["groups_kept"] == 0
    trainer = _trainer(tmp_path / "b", [*tiny_overrides, f"gateway.harness={sys.executable} -c 'raise SystemExit(3)'"])
    try:
        with pytest.raises(TrainerError, match="exited with code 3"):
            trainer.train_step()
    finally:
        trainer.close()
