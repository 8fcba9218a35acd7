"""Generation backends behind the :class:`~trainer.policy.Policy` contract (imported lazily: each pulls its own deps)."""
