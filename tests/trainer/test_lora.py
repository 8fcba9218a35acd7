"""LoRA through peft: only the adapters train, every adapter moves, the base weights stay put."""

import torch

from trainer.config import load_config
from trainer import Trainer

RUN = ["rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=6", "env.max_turns=2",
       "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01", "optim.lr=0.01", "policy.lora.rank=4"]


def test_lora_update_moves_adapters_only(tmp_path, tiny_overrides):
    trainer = Trainer(load_config(None, tiny_overrides + RUN + [f"out_dir={tmp_path}"]))
    params = dict(trainer.model.named_parameters())
    trainable = {n for n, p in params.items() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    before = {n: p.detach().clone() for n, p in params.items()}
    trainer.train_step()  # B starts at zero, so A gets no gradient in the first update: take two
    record = trainer.train_step()
    trainer.close()
    assert record["updated"] == 1.0 and record["logprob_gap_max"] < 1e-4
    moved = {n for n, p in params.items() if not torch.equal(p.detach(), before[n])}
    assert moved == trainable
