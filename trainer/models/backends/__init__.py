"""Generation backends behind the :class:`~agentgym_envs.policies.Policy` contract (imported lazily: each pulls its own deps).

A backend's optional prefix-reuse scope (``HFPolicy.reusing_prefixes``) is entered by the episode runners
through :func:`trainer.collect.episodes.reusing_prefixes`, which needs no backend.
"""
