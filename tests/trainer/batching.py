"""Test helpers shared by the micro-batching tests: a token budget that splits a batch into N forwards, and
a batch whose ratios and KL are live."""

import torch

from trainer.learn.update import micro_batches


def alternating_advantages(kept) -> list[list[float]]:
    """Per-turn advantages of alternating sign that grow with the turn (rows differ, every turn counts)."""
    return [[(-1.0) ** k * (1.0 + 0.5 * turn) for turn in range(t.num_turns)] for k, t in enumerate(kept)]


def take_reference_and_move(trainer, scale: float = 0.02) -> None:
    """Freeze the current weights as the KL reference, then move the policy by seeded noise, so ratios
    (and the trainer-vs-sampler gap) differ from 1 and the KL term is live."""
    trainer.ref_model = trainer.reference_copy()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in trainer.model.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * scale)


def budget_for(kept, parts: int) -> int:
    """The smallest ``optim.micro_batch_tokens`` that packs the segments of ``kept`` into exactly ``parts`` forwards."""
    lengths = [len(s.token_ids) for t in kept for s in t.segments]
    for budget in range(min(lengths), sum(lengths) * max(lengths) + 1):
        if len(micro_batches(lengths, budget)) == parts:
            return budget
    raise AssertionError(f"no budget splits rows of lengths {lengths} into {parts}")
