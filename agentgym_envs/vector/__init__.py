"""Text vector envs: many text envs stepped as one batch (processes or threads), with same-step
auto-reset, groups of rollouts from one identical start state, and restarts of crashed workers."""

from .text_vector_env import TextVectorEnv, VectorEnvError, derive_seed

__all__ = ["TextVectorEnv", "VectorEnvError", "derive_seed"]
