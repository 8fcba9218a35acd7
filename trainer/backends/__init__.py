"""Generation backends behind the :class:`~agentgym_envs.policies.Policy` contract (imported lazily: each pulls its own deps)."""
