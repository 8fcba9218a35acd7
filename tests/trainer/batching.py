"""Test helper shared by the micro-batching tests: a token budget that splits a batch into N forwards."""

from trainer.learn.update import micro_batches


def budget_for(kept, parts: int) -> int:
    """The smallest ``optim.micro_batch_tokens`` that packs the segments of ``kept`` into exactly ``parts`` forwards."""
    lengths = [len(s.token_ids) for t in kept for s in t.segments]
    for budget in range(min(lengths), sum(lengths) * max(lengths) + 1):
        if len(micro_batches(lengths, budget)) == parts:
            return budget
    raise AssertionError(f"no budget splits rows of lengths {lengths} into {parts}")
