"""Compact GRPO/PPO trainer for multi-turn agents (``docs/architecture.md``, The trainer).

In code: ``from trainer import Trainer, fit`` and ``from trainer.config import load_config``, then
``fit(Trainer(load_config("configs/quickstart.yaml")))`` (what ``agentgym train`` does).

The tree is the architecture: one room per stage of an RL step and per service around it, each importing
only the rooms below it (``tests/trainer/test_layout.py`` checks the table; each room's ``__init__`` says
what it owns):

* ``collect/`` — experience: text episodes (evaluation, BC data), exact token trajectories and the
  prefix-extension check, groups of G rollouts, asynchronous collection under bounded staleness, rollout dumps.
* ``learn/`` — learning from it: advantage estimators (``algorithms/``), the clipped policy-gradient loss,
  packed log-probs (``kernels/``: from hidden states without [N, V] logits), the value head, the update, BC.
* ``models/`` — what plays: model families and the registry, the policy settings and loading, device
  placement, the backends (``hf``, ``vllm``, ``openai_http``) behind the :class:`Policy` contract, and the
  embedded ``tiny/`` policy.
* ``serve/`` — serving a policy: the OpenAI-compatible server (``python -m trainer.serve``) and the
  trajectory-capturing gateway an external harness plays through.
* ``run/`` — a job: the config tree, the :class:`Trainer` (one step: collect, advantages, update), ``fit``,
  checkpoints, devices, distributed, Ray, logging, dashboards.
* ``cli/`` — ``agentgym train``, ``quickstart``, ``gateway``, ``configs``, ``models``, ``plot``.
* ``config.py`` (the config tree as users import it), ``errors.py``, ``seeding.py``, ``recipes.py``.

The :class:`Policy` contract (chats in, completions with exact ids and log-probs out) lives with the env-side
expert and random policies in :mod:`agentgym_envs.policies` (re-exported here) so that envs, games and
leaderboards share it without importing the trainer. ``Trainer`` and ``fit`` load on first use: heavy
dependencies (torch, transformers) load only when a submodule that needs them is imported.
"""

from typing import Any

from agentgym_envs.policies import Completion, Message, Policy, SamplingConfig, TokenPolicy

__all__ = ["Completion", "Message", "Policy", "SamplingConfig", "TokenPolicy", "Trainer", "fit"]


def __getattr__(name: str) -> Any:
    if name == "Trainer":
        from .run.loop import Trainer

        return Trainer
    if name == "fit":
        from .run.fit import fit

        return fit
    raise AttributeError(f"module 'trainer' has no attribute {name!r}")
