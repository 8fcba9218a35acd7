"""What a vLLM weight sync sends and how the engine's worker loads it (no vLLM import at module level).

:func:`hf_named_weights` names a ``transformers`` model's weights as its checkpoint does, with ``peft``
LoRA adapters merged; :func:`reload_on_worker` runs inside the engine's worker (in-process) and reloads them
in place; :func:`checkpoint_names` lists a checkpoint's tensors so a sync can be checked to be complete.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch


def hf_named_weights(model: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` of every weight of a ``transformers`` model under its checkpoint names.

    A ``peft`` LoRA model yields its base model's names with each adapted weight merged
    (``W + scale · B A``), computed without modifying the model; adapter tensors themselves are left out.
    Tied weights appear once (``named_parameters`` de-duplicates them).
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    merged: dict[str, torch.Tensor] = {}
    if base is not model:
        for name, module in base.named_modules():
            if hasattr(module, "base_layer") and hasattr(module, "get_delta_weight") and hasattr(module, "lora_A"):
                weight = module.base_layer.weight.detach()
                for adapter in module.active_adapters:
                    if adapter in module.lora_A and not getattr(module, "merged", False):
                        weight = weight + module.get_delta_weight(adapter).to(weight.dtype)
                merged[f"{name}.base_layer.weight"] = weight
    for name, param in base.named_parameters():
        if any(part.startswith("lora_") for part in name.split(".")):
            continue
        yield name.replace(".base_layer.", "."), merged.get(name, param.detach())


def reload_on_worker(worker: Any, named: list[tuple[str, torch.Tensor]], on_cpu: bool) -> None:
    """Runs inside vLLM's worker (this process): in-place reload, then (CPU) re-pack a tied output head.

    The layerwise reload builds each layer's new tensors, then copies them into the original storage, so
    on CUDA the weights stay in sleep mode's ``weights`` pool and the next sleep still releases them; the
    trainer's tensors may be on the GPU (a device-to-device copy) or the CPU.
    """
    worker.reload_weights(weights_iterator=iter(named), is_checkpoint_format=True)
    if not on_cpu:  # on CUDA the head reads the shared embedding weight directly: nothing derived to redo
        return
    model = worker.model_runner.get_model()
    head = getattr(model, "lm_head", None)
    weight = getattr(head, "weight", None)
    # The reload copies new values into the embedding (whose weight a tied head shares) but only
    # re-processes layers it loaded, and the tied head is not one: on CPU its packed GEMM copy would
    # keep the old values. Re-running its post-load processing re-packs it from the shared weight.
    tied = weight is not None and any(m is not head and getattr(m, "weight", None) is weight for m in model.modules())
    if tied and hasattr(head, "quant_method"):
        head.quant_method.process_weights_after_loading(head)


def checkpoint_names(model_dir: Path) -> set[str] | None:
    """Tensor names of the safetensors checkpoint in ``model_dir`` (None when there is none)."""
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        return None
    from safetensors import safe_open

    names: set[str] = set()
    for f in files:
        with safe_open(str(f), framework="pt") as handle:
            names.update(handle.keys())
    return names
