"""RL options: ``algorithm.positive_only`` (self-imitation) and ``optim.name=sgd``."""

import pytest
import torch

from trainer.config import load_config
from trainer.errors import ConfigError
from trainer import Trainer

RUN = ["env.max_turns=3", "rollout.tasks_per_step=2", "rollout.group_size=3", "rollout.max_new_tokens=6",
       "algorithm.filter_zero_variance=false", "rollout.invalid_penalty=0.1"]


def test_positive_only_clips_negative_advantages(tiny_overrides, tmp_path):
    per_run = {}
    for positive_only in (False, True):
        trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"algorithm.positive_only={positive_only}",
                                                                    f"out_dir={tmp_path / str(positive_only)}"]))
        try:
            trajectories, _ = trainer.collect()
            trajectories[0].rewards[0] += 1.0  # one clearly better rollout per run, same in both
            per_run[positive_only] = trainer.advantages(trajectories)[1]
        finally:
            trainer.close()
    plain, clipped = per_run[False], per_run[True]
    assert any(a < 0 for turns in plain for a in turns) and any(a > 0 for turns in plain for a in turns)
    assert clipped == [[max(a, 0.0) for a in turns] for turns in plain]


def test_sgd_moves_weights_by_exactly_lr_times_the_gradient(tiny_overrides, tmp_path):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + ["optim.name=sgd", "optim.lr=0.5", "optim.grad_clip=1e9",
                                                                f"out_dir={tmp_path}"]))
    try:
        assert isinstance(trainer.optimizer, torch.optim.SGD)
        trajectories, _ = trainer.collect()
        kept, _, _ = trainer.advantages(trajectories)
        advantages = [[(-1.0) ** k] * t.num_turns for k, t in enumerate(kept)]
        before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
        trainer.update(kept, advantages)
        for n, p in trainer.model.named_parameters():
            torch.testing.assert_close(p.detach(), before[n] - 0.5 * p.grad, rtol=0, atol=1e-6)
        assert any(not torch.equal(p.detach(), before[n]) for n, p in trainer.model.named_parameters())
    finally:
        trainer.close()
    with pytest.raises(ConfigError, match="optim.name"):
        load_config(None, tiny_overrides + ["optim.name=adam"])
