"""Where the trainer's tensors live and in which dtype: ``policy.device``, ``policy.dtype``, checkpointing.

``auto`` means CUDA when ``torch.cuda.is_available()`` (``cuda:$LOCAL_RANK`` under ``torchrun``, so each
rank takes its own GPU), else the CPU. The weights take ``policy.dtype``; the log-prob, loss and value
maths upcast to float32 whatever it is (:mod:`trainer.learn.kernels.torch_chunked`, the Triton kernel, the value
head, the sampler's log-softmax), so bf16 changes the forward's rounding, not the loss's arithmetic.

>>> resolve_device("cpu"), resolve_dtype("bfloat16")
(device(type='cpu'), torch.bfloat16)
"""

from __future__ import annotations

import ctypes
import os
import re
from typing import Any

import torch

from ..errors import ConfigError

DTYPES: dict[str, torch.dtype] = {"float32": torch.float32, "bfloat16": torch.bfloat16}
"""``policy.dtype`` names and the weight dtype each gives."""

_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")


def check_device(name: str) -> None:
    """Raise :class:`ConfigError` unless ``name`` is ``auto``, ``cpu``, ``cuda`` or ``cuda:N``."""
    if not isinstance(name, str) or not _DEVICE.fullmatch(name):
        raise ConfigError(f"policy.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {name!r}")


def resolve_device(name: str, *, cuda_available: bool | None = None, local_rank: str | None = None) -> torch.device:
    """The ``torch.device`` that ``policy.device`` names; ``auto`` picks CUDA when present.

    ``cuda_available`` / ``local_rank`` default to ``torch.cuda.is_available()`` / ``$LOCAL_RANK`` (tests
    pass them to check the decision without a GPU). An explicit ``cuda`` without CUDA raises ConfigError.
    """
    check_device(name)
    available = torch.cuda.is_available() if cuda_available is None else cuda_available
    rank = os.environ.get("LOCAL_RANK") if local_rank is None else local_rank
    if name == "auto":
        return torch.device(f"cuda:{int(rank)}" if rank else "cuda") if available else torch.device("cpu")
    if name.startswith("cuda") and not available:
        raise ConfigError(f"policy.device={name!r} needs CUDA, but torch.cuda.is_available() is False; "
                          "use policy.device=cpu (or auto)")
    return torch.device(name)


def cpu_threads(requested: int) -> int:
    """torch's CPU thread count for ``policy.threads``: the number itself, or for 0 the cores this process
    may run on (its affinity mask, not the machine's count: a container or ``taskset`` limits it)."""
    if requested > 0:
        return requested
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


MMAP_THRESHOLD = 32 << 20
"""Allocations of at least this many bytes get their own mapping (:func:`return_freed_memory`)."""


def _libc() -> Any:
    return ctypes.CDLL("libc.so.6")


def return_freed_memory(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` so that freed memory can be handed back between phases.

    glibc's default threshold starts at 128 KiB but rises to the size of each large block freed (up to
    32 MiB), and the heap then keeps what a phase freed: RSS ratchets up phase by phase (warm-up, evaluation,
    RL) past what any phase needs. Fixing the threshold stops the ratchet's moving part and lets
    :func:`trim_freed_memory` (called after each phase) return the heap's free pages. The threshold itself is
    high on purpose: at 1 MiB every activation got its own mapping, and the kernel zeroed fresh pages for each
    one; measured on two SmolLM2 recipe updates, 204 s of system time (121 million page faults) against 58 s
    at 32 MiB, 8 min 54 s against 7 min 42 s, the same trajectories, peak RSS 7.9 against 8.9 GB. Huge pages
    for torch's blocks (``THP_MEM_ALLOC_ENABLE=1``) cut the faults to 18 million but not the time (197 s):
    the cost is zeroing fresh memory, which only reuse avoids. Returns whether it was set: not off glibc,
    nor when ``MALLOC_MMAP_THRESHOLD_`` is in the environment (the user's own)."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        return bool(_libc().mallopt(-3, int(threshold)))  # -3: M_MMAP_THRESHOLD (malloc.h)
    except (OSError, AttributeError):
        return False


def trim_freed_memory() -> bool:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim(0)``): the end of a phase, when what
    its activations held is free. Returns whether any memory was released (false off glibc)."""
    try:
        return bool(_libc().malloc_trim(0))
    except (OSError, AttributeError):
        return False


def resolve_dtype(name: str) -> torch.dtype:
    """The weight dtype ``policy.dtype`` names."""
    if name not in DTYPES:
        raise ConfigError(f"policy.dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    return DTYPES[name]


def place_model(model: Any, device: torch.device, dtype: torch.dtype, *, gradient_checkpointing: bool = False) -> Any:
    """Move ``model`` to ``device`` in ``dtype`` and, if asked, turn on non-reentrant gradient checkpointing.

    With ``peft`` adapters the frozen embedding's output gets ``requires_grad`` (``enable_input_require_grads``)
    so the checkpointed blocks still see an input that needs grad. A model without HF's checkpointing support
    raises :class:`ConfigError` saying so.
    """
    model = model.to(device=device, dtype=dtype)
    if gradient_checkpointing:
        if not getattr(model, "supports_gradient_checkpointing", False) and not hasattr(model, "get_base_model"):
            raise ConfigError(f"policy.gradient_checkpointing=true: {type(model).__name__} does not support HF "
                              "gradient checkpointing; set policy.gradient_checkpointing=false")
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.2x; the old name warns there
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        if hasattr(model, "get_base_model"):  # peft: the frozen base's embeddings would cut the graph
            model.enable_input_require_grads()
    return model


def float32_master(optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
    """Make ``optimizer`` update low-precision (bf16) parameters through float32 master copies; returns it.

    Pure bf16 weights lose small updates: bf16 keeps 8 significant bits, so a weight of 0.02 moves only in
    steps of ~1.5e-4 and AdamW's ~``lr`` = 1e-6 per step rounds away every time (the model never learns). Here
    each bf16 parameter's optimiser state holds ``master`` (its float32 value) and the moments in float32;
    a step swaps the masters in (with the bf16 gradients upcast), steps, and writes the rounded masters back.
    float32 parameters are untouched, so a float32 run is bit for bit the plain optimiser. The masters are in
    ``optimizer.state_dict()`` and are restored in float32 by ``load_state_dict`` (a resume keeps them exact).
    """
    masters = _Float32Masters()
    optimizer.register_step_pre_hook(masters.swap_in)
    optimizer.register_step_post_hook(masters.swap_out)
    optimizer.register_load_state_dict_pre_hook(masters.keep)
    optimizer.register_load_state_dict_post_hook(masters.restore_float32)
    return optimizer


class _Float32Masters:
    """The hooks of :func:`float32_master`: what is swapped during a step, and the state dict being loaded."""

    def __init__(self) -> None:
        self.swapped: list[tuple[dict, int, torch.Tensor, torch.Tensor]] = []  # (group, index, param, master)
        self.loading: list[dict] = []

    def swap_in(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """Before a step: each bf16 parameter with a gradient is replaced by its master (state moved with it)."""
        for group in opt.param_groups:
            for i, p in enumerate(group["params"]):
                if p.grad is None or p.dtype == torch.float32:
                    continue
                state = opt.state.pop(p, {})
                master = state.pop("master", None)
                master = p.detach().float() if master is None else master
                master.grad = p.grad.float()
                opt.state[master], group["params"][i] = state, master
                self.swapped.append((group, i, p, master))

    @torch.no_grad()
    def swap_out(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """After a step: the rounded masters become the weights; the state (master included) goes back to them."""
        for group, i, p, master in self.swapped:
            p.copy_(master)
            master.grad = None
            state = opt.state.pop(master)
            state["master"], group["params"][i] = master, p
            opt.state[p] = state
        self.swapped.clear()

    def keep(self, opt: torch.optim.Optimizer, state_dict: dict) -> None:
        self.loading.append(state_dict)

    def restore_float32(self, opt: torch.optim.Optimizer) -> None:
        """``load_state_dict`` casts state to the parameter's dtype; the masters and moments must stay float32."""
        state_dict = self.loading.pop()
        ids = [i for g in state_dict["param_groups"] for i in g["params"]]
        by_id = dict(zip(ids, (p for g in opt.param_groups for p in g["params"])))
        for key, values in state_dict["state"].items():
            p = by_id.get(key)
            if p is None or p.dtype == torch.float32:
                continue
            for name, value in values.items():
                if name != "step" and torch.is_tensor(value) and value.is_floating_point():
                    opt.state[p][name] = value.to(device=p.device, dtype=torch.float32)
