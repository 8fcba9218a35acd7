"""Generation backends behind the :class:`~agentgym_envs.policies.Policy` contract (imported lazily: each pulls its own deps)."""

import contextlib
from typing import Any


def reusing_prefixes(policy: Any) -> contextlib.AbstractContextManager:
    """The policy's prefix-reuse scope for one batch of episodes (``HFPolicy.reusing_prefixes``: each turn's
    prefill reuses the episode's earlier turns), or a no-op for a policy without one (vLLM caches prefixes
    itself; text policies have no cache)."""
    scope = getattr(policy, "reusing_prefixes", None)
    return scope() if callable(scope) else contextlib.nullcontext()
