"""Meta-environments: self-play environment design and skill learning (``docs/architecture.md``, Meta-environments)."""
