"""How the vLLM backend configures and calls its in-process engine: ``vllm.LLM`` arguments, stop ids, and
the guards around each call (the caller's RNG states kept, vLLM's expected reload warnings silenced)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import torch

#: KV-cache size on CPU when neither ``kv_cache_bytes`` nor ``VLLM_CPU_KVCACHE_SPACE`` says otherwise
#: (vLLM's own default reserves ``gpu_memory_utilization`` of the machine's RAM).
DEFAULT_CPU_KV_CACHE_BYTES = 512 * 2**20


def llm_arguments(model_dir: Path, hf_config: dict, on_cpu: bool, *, dtype: str, seed: int, max_num_seqs: int,
                   load_format: str, enforce_eager: bool, max_model_len: int | None, kv_cache_bytes: int | None,
                   gpu_memory_utilization: float | None) -> dict[str, Any]:
    """``vllm.LLM`` arguments: the sampling contract's settings, the GPU memory share (CUDA only) and the
    CPU workarounds (CPU only)."""
    kwargs: dict[str, Any] = {
        "model": str(model_dir), "tokenizer": str(model_dir), "dtype": dtype, "seed": seed,
        "max_num_seqs": max_num_seqs, "load_format": load_format,
        "enforce_eager": enforce_eager,  # True: no torch.compile / CUDA-graph minutes at start-up
        "logprobs_mode": "processed_logprobs",  # log-probs after temperature: what the trainer recomputes
        "generation_config": "vllm",  # ignore the model's sampling defaults: only SamplingConfig decides
    }
    if max_model_len is not None:
        kwargs["max_model_len"] = max_model_len
    if not on_cpu and gpu_memory_utilization is not None:
        kwargs["gpu_memory_utilization"] = float(gpu_memory_utilization)
    if on_cpu:
        # vLLM 0.32 on CPU: a seeded request whose prompt is prefilled in chunks fails ("CPU Generator
        # does not use offset": the step that discards a partial prefill's sample rewinds the generator,
        # which only CUDA generators can). Without chunking every prompt is prefilled in one step.
        longest = max_model_len or hf_config.get("max_position_embeddings")
        kwargs.update(enable_chunked_prefill=False, max_num_batched_tokens=max(int(longest or 0), 8192))
    if kv_cache_bytes is not None:
        kwargs["kv_cache_memory_bytes"] = int(kv_cache_bytes)
    elif on_cpu and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
        kwargs["kv_cache_memory_bytes"] = DEFAULT_CPU_KV_CACHE_BYTES
    return kwargs


def stop_ids(model_dir: Path, tokenizer: Any) -> frozenset[int]:
    """The tokenizer's EOS plus any end-of-turn ids the generation config names (as in the HF backend)."""
    ids = {int(tokenizer.eos_token_id)}
    for name in ("generation_config.json", "config.json"):
        path = model_dir / name
        if path.exists():
            configured = json.loads(path.read_text()).get("eos_token_id")
            if configured is not None:
                ids.update(int(i) for i in (configured if isinstance(configured, list) else [configured]))
    return frozenset(ids)


@contextlib.contextmanager
def engine_threads(count: int):
    """Run the block with this thread's OpenMP thread count at ``count`` (the engine's), then restore it.

    A thread's OpenMP count is its own: a thread the trainer did not start (an HTTP handler of the gateway or
    of ``agentgym serve``) gets the machine's default, not the ``torch.set_num_threads`` of the main thread,
    and vllm-cpu's attention then fails its check that the count it planned for is the one it runs with
    (``cpu_attn_impl.hpp``: ``metadata->thread_num == thread_num``)."""
    before = torch.get_num_threads()
    if before != count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@contextlib.contextmanager
def caller_rng_kept():
    """Restore python's, numpy's and torch's global RNG states afterwards: the engine shares this process."""
    import random

    import numpy as np

    states = random.getstate(), np.random.get_state()
    cuda = [torch.cuda.current_device()] if torch.cuda.is_available() and torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        try:
            yield
        finally:
            random.setstate(states[0])
            np.random.set_state(states[1])


@contextlib.contextmanager
def quiet(logger_name: str):
    """Silence a logger's warnings for the duration (vLLM warns on every reload that a tied head and the
    rotary cache 'failed to load': both are expected; the names are checked before the sync instead)."""
    log = logging.getLogger(logger_name)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
