"""Environment and task design by self-play: a designer writes tasks or whole envs for a solver (docs/meta_envs.md)."""
