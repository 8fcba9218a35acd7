"""Adapters that hand agentgym envs to other people's trainers and tools.

One module per third-party API, each importing its package only when used (optional extras):

* :mod:`agentgym_envs.interop.trl` — TRL's ``GRPOTrainer(environment_factory=...)`` (extra ``trl``);
* :mod:`agentgym_envs.interop.verifiers` — a verifiers v1 taskset/env (extra ``verifiers``);
* :mod:`agentgym_envs.interop.openenv` — an OpenEnv ``Environment`` served with ``create_app`` (extra ``openenv``).

Nothing is imported eagerly here: ``import agentgym_envs.interop`` works without any of those packages.
"""
