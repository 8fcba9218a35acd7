"""Collecting experience: the first stage of an RL step.

Owns playing envs with a policy and keeping what happened token-exact: text episodes for evaluation, BC data
and corpora (``episodes``, with the ``env:`` and ``eval:`` settings), the :class:`Trajectory` with its
prefix-extension check (``trajectory``), groups of G rollouts from one start state (``rollout``, ``rollout:``),
asynchronous collection under bounded staleness (``asynchronous``, ``staleness``, ``asynchronous:``) and the
chat-format rollout dumps (``rollout_dump``). It plays against the :class:`~agentgym_envs.policies.Policy`
contract, never a concrete backend, so it sits below the models.

May import: errors, seeding.
"""
