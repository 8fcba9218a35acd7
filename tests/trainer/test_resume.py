"""A killed run resumes exactly; an update moves every trainable parameter."""

import pytest
import torch

from trainer.config import load_config
from trainer.run.log import read_jsonl
from trainer import Trainer, fit

RUN = ["rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=6", "env.max_turns=3",
       "steps=4", "checkpoint_every=2", "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01",
       "loss.kl_coef=0.01", "optim.lr=0.001", "optim.warmup_steps=3", "tensorboard=true"]


def _weights(trainer):
    return {k: v.clone() for k, v in trainer.model.state_dict().items()}


def test_straight_run_equals_killed_and_resumed_run(tmp_path, tiny_overrides):
    straight = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={tmp_path / 'a'}"]))
    fit(straight, echo=None)
    straight.close()

    first = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={tmp_path / 'b'}"]))
    fit(first, stop_after=2, echo=None)  # "killed" after the step-2 checkpoint
    first.close()
    del first
    resumed = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={tmp_path / 'b'}"]))
    fit(resumed, echo=None)
    resumed.close()

    a, b = _weights(straight), _weights(resumed)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert straight.optimizer.state_dict()["state"][0]["step"] == resumed.optimizer.state_dict()["state"][0]["step"]
    log_a, log_b = read_jsonl(tmp_path / "a" / "metrics.jsonl"), read_jsonl(tmp_path / "b" / "metrics.jsonl")
    assert [r["step"] for r in log_b] == [1, 2, 3, 4]
    assert [r["loss"] for r in log_a] == [r["loss"] for r in log_b]
    for key in ("reward", "success", "entropy", "clip_fraction", "kl_ref", "tokens_per_s", "env_steps_per_s",
                "logprob_gap_mean", "logprob_gap_max"):
        assert key in log_a[-1], key
    assert log_a[-1]["logprob_gap_max"] < 1e-4
    # TensorBoard holds the same curve, and the resumed run's (two event files, the first purged past step 2)
    tb_a, tb_b = _scalars(tmp_path / "a" / "tensorboard", "loss"), _scalars(tmp_path / "b" / "tensorboard", "loss")
    assert tb_a == tb_b and [s for s, _ in tb_a] == [r["step"] for r in log_a]
    assert [v for _, v in tb_a] == pytest.approx([r["loss"] for r in log_a], rel=1e-6, abs=1e-7)  # float32 events


def _scalars(log_dir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(log_dir))
    events.Reload()
    return [(e.step, e.value) for e in events.Scalars(tag)]


def test_every_trainable_parameter_moves_in_one_update(tmp_path, tiny_overrides):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["steps=1", f"out_dir={tmp_path}"]))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    record = trainer.train_step()
    trainer.close()
    assert record["updated"] == 1.0
    unmoved = [n for n, p in trainer.model.named_parameters() if p.requires_grad and torch.equal(p.detach(), before[n])]
    assert not unmoved, f"parameters that did not move: {unmoved}"


def test_ppo_trains_the_value_head_and_resumes_it(tmp_path, tiny_overrides):
    run = tiny_overrides + RUN + ["algorithm.estimator=ppo_gae", "loss.kl_coef=0.0", "env.dense_reward=true"]
    trainer = Trainer(load_config(None, run + ["steps=2", f"out_dir={tmp_path}"]))
    with torch.no_grad():  # rewards of an untrained policy are ~0: a wrong bias gives the critic something to fix
        trainer.value_head.linear.bias.fill_(1.0)
    before = [p.detach().clone() for p in trainer.value_head.parameters()]
    fit(trainer, echo=None)
    trainer.close()
    assert all(not torch.equal(a, b) for a, b in zip(before, trainer.value_head.parameters()))
    assert float(trainer.value_head.linear.bias.detach()) < 1.0  # pulled towards the (zero) returns
    resumed = Trainer(load_config(None, run + ["steps=2", f"out_dir={tmp_path}"]))
    assert resumed.resume()
    for a, b in zip(trainer.value_head.parameters(), resumed.value_head.parameters()):
        assert torch.equal(a, b)
    records = read_jsonl(tmp_path / "metrics.jsonl")
    assert all("value_loss" in r for r in records)
