"""Defaults sized to the machine and checked against the env, so that a real model runs without tuning.

DESIGN §9: every default is chosen so that a model of SmolLM2-135M's size trains on a 2-core, 24 GiB machine
as a new user runs it. Two of them need the run's model, device and env, so the trainer settles them here:

- :func:`auto_micro_batch_tokens` (``optim.micro_batch_tokens: auto``): the update's token budget per forward,
  from the device's memory and the model's depth and width. Measured on SmolLM2-135M (30 layers × 576) on CPU:
  one forward of a turn-mode batch was OOM-killed at 24.2 GB, a 2,048-token budget peaked at 7.3 GB, of which
  2.2 GB are weights, gradients and AdamW's moments: ≈ 2.5 MB per token, ≈ 36 float32 values per layer and
  hidden unit; the estimate below takes 48.
- :func:`check_first_prompt`: the env's first prompt must leave room for a reply inside
  ``rollout.max_context_tokens``, else every episode ends before its first reply and the run "trains" on
  nothing; this says so, with the numbers, before training.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from ..errors import ConfigError

#: Activation values kept per token, per decoder layer, per hidden unit during the update (see above).
ACTIVATIONS_PER_LAYER_UNIT = 48
#: Share of the device's memory the update's activations may take (weights, optimiser, sampler need the rest).
MEMORY_SHARE = 0.25
#: The smallest budget ``auto`` picks: below it forwards get too small to be worth their overhead.
MIN_TOKENS = 256


def device_memory_bytes(device: torch.device) -> int:
    """Total memory of ``device``: the GPU's, or on CPU the physical memory capped by a cgroup limit if set."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file) as f:
                raw = f.read().strip()
        except OSError:
            continue
        if raw.isdigit():
            total = min(total, int(raw))
    return int(total)


def auto_micro_batch_tokens(model_config: Any, *, memory_bytes: int, rows: int, max_row_tokens: int,
                            dtype_bytes: int = 4) -> int:
    """The token budget per forward that keeps the update's activations within :data:`MEMORY_SHARE` of memory.

    ``rows`` × ``max_row_tokens`` is the largest minibatch the run can pack; when even that fits, the answer is
    0 (one forward per minibatch, exactly as without micro-batching).

    >>> from types import SimpleNamespace
    >>> smollm2 = SimpleNamespace(num_hidden_layers=30, hidden_size=576)
    >>> auto_micro_batch_tokens(smollm2, memory_bytes=24 * 2**30, rows=32, max_row_tokens=1024)
    1941
    >>> auto_micro_batch_tokens(smollm2, memory_bytes=24 * 2**30, rows=1, max_row_tokens=1024)
    0
    """
    layers = int(getattr(model_config, "num_hidden_layers", 0) or 1)
    hidden = int(getattr(model_config, "hidden_size", 0) or 1)
    per_token = ACTIVATIONS_PER_LAYER_UNIT * layers * hidden * dtype_bytes
    budget = int(MEMORY_SHARE * memory_bytes) // per_token
    if rows * max_row_tokens <= budget:
        return 0
    return max(MIN_TOKENS, budget)


def first_prompt_tokens(policy: Any, spec: Any, task_index: int = 0) -> int:
    """Tokens of the first prompt of task ``task_index`` of ``spec`` (a :class:`trainer.collect.episodes.PlaySpec`) as
    ``policy`` renders it (system prompt, instruction, first observation, the template's own turns, tools)."""
    env = spec.make()
    try:
        observation, info = env.reset(seed=0, options={"task_index": int(task_index)})
        history = spec.new_history()
        history.start(observation, spec.start_info(info))
        return len(policy.encode_chat(history.messages()))
    finally:
        env.close()


def check_first_prompt(policy: Any, spec: Any, *, max_context_tokens: int, max_new_tokens: int) -> int:
    """Raise :class:`ConfigError` when the first prompt leaves no room for a reply; return its length."""
    tokens = first_prompt_tokens(policy, spec)
    if tokens + max_new_tokens > max_context_tokens:
        fits = -(-(tokens + max_new_tokens) // 256) * 256
        raise ConfigError(
            f"the first prompt of {spec.env_id} is {tokens} tokens, but rollout.max_context_tokens={max_context_tokens} "
            f"leaves {max_context_tokens - max_new_tokens} for a prompt after rollout.max_new_tokens={max_new_tokens}: "
            f"no episode could reply, so nothing would train. Set rollout.max_context_tokens={fits} or more "
            f"(or a shorter env.system_prompt)")
    return tokens
