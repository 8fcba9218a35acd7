"""Compact GRPO/PPO trainer for multi-turn agents (``docs/architecture.md``, The trainer).

The tree is the architecture:

* ``backends/`` — model backends (``hf``; ``vllm``, an in-process engine the trainer's weights are synced
  into; ``openai_http``) implementing the :class:`Policy` contract (chats in, completions with exact ids and
  log-probs out), which lives with the env-side expert and random policies in :mod:`agentgym_envs.policies`
  (re-exported here) so that envs, games and leaderboards share it without importing the trainer.
* ``tiny/`` — the embedded default policy: a BPE tokenizer and a Qwen2-style LM built locally.
* ``episodes.py`` (text episodes for evaluation and BC data), ``trajectory.py`` (exact token bookkeeping,
  the prefix-extension check) and ``rollout.py`` (groups of G rollouts from one start state).
* ``algorithms/`` — advantage estimators; ``loss.py`` — the clipped policy-gradient loss;
  ``kernels/`` — log-probs and entropies from hidden states without [N, V] logits; ``logprobs.py`` packs
  trajectories and recomputes their log-probs.
* ``config.py``, ``loop.py``, ``checkpoint.py``, ``seeding.py``, ``log.py``, ``bc.py`` — the run;
  ``cli/`` — ``agentgym train`` and ``agentgym quickstart``.

Heavy dependencies (torch, transformers) load only when a submodule that needs them is imported.
"""

from agentgym_envs.policies import Completion, Message, Policy, SamplingConfig, TokenPolicy

__all__ = ["Completion", "Message", "Policy", "SamplingConfig", "TokenPolicy"]
