"""Meta-environments: self-play environment design and skill learning (shared/DESIGN.md §1)."""
