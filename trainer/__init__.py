"""Compact GRPO/PPO trainer for multi-turn agents (shared/DESIGN.md §3). Lands with the trainer issue."""
