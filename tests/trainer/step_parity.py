"""One real training update through a chosen log-prob kernel backend, for comparing backends (issue 9).

The same seeded tiny policy collects the same multi-turn batch (the sampler does not depend on the
kernel), its weights are then perturbed the same way so that importance ratios differ from 1 and the
clip, KL and entropy terms are all live, and one ``Trainer.update`` runs. Returns the update's metrics
and every parameter's gradient.
"""

from __future__ import annotations

import torch

from trainer.config import load_config
from trainer import Trainer

STEP = ["rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=8", "env.max_turns=3",
        "rollout.temperature=0.7", "loss.kl_coef=0.05", "loss.entropy_coef=0.01", "loss.clip_low=0.05",
        "loss.clip_high=0.05", "algorithm.filter_zero_variance=false", "optim.lr=1e-4"]


def update_through(backend: str, tiny_overrides: list[str], out_dir) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    trainer = Trainer(load_config(None, tiny_overrides + STEP + [f"loss.kernel_backend={backend}", f"out_dir={out_dir}"]))
    try:
        trajectories, _ = trainer.collect()
        kept, _, _ = trainer.advantages(trajectories)
        advantages = [[(-1.0) ** k * (1.0 + 0.25 * turn) for turn in range(t.num_turns)] for k, t in enumerate(kept)]
        trainer.ref_model = trainer.reference_copy()
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():  # the policy moved since sampling: ratios != 1, some clipped
            for p in trainer.model.parameters():
                p.add_(torch.randn(p.shape, generator=generator) * 0.02)
        metrics = trainer.update(kept, advantages)
    finally:
        trainer.close()
    return metrics, {n: p.grad.detach().clone() for n, p in trainer.model.named_parameters() if p.grad is not None}


def assert_same_update(a: tuple, b: tuple, *, value_tol: float, grad_tol: float) -> None:
    (ma, ga), (mb, gb) = a, b
    for key in ("loss", "pg_loss", "entropy", "kl_ref", "clip_fraction", "logprob_gap_mean", "logprob_gap_max"):
        assert abs(ma[key] - mb[key]) <= value_tol, (key, ma[key], mb[key])
    assert ma["clip_fraction"] > 0 and ma["kl_ref"] > 0  # the clip and KL terms were exercised
    assert ga.keys() == gb.keys() and ga
    scale = max(float(g.abs().max()) for g in ga.values())
    worst = max(float((ga[n] - gb[n]).abs().max()) for n in ga)
    assert worst <= grad_tol * scale, (worst, scale)
