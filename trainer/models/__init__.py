"""What plays and learns: models, their settings, and the backends that sample from them.

Owns the ``policy:`` settings and :func:`~trainer.models.policy.load_model` (``policy``), device placement and
dtypes (``device``), the generation backends behind the :class:`~agentgym_envs.policies.Policy` contract
(``backends/``: ``hf``, ``vllm``, ``openai_http``), the embedded tiny policy (``tiny/``, built from envs' own
text, which it plays through :mod:`trainer.collect.episodes`), and random-weight models of real
architectures with the model registry (``families``, ``build``, ``registry``, ``gguf``).

May import: errors, seeding, collect.

>>> from trainer.models import FAMILIES
>>> FAMILIES
('qwen2', 'qwen3', 'llama3', 'gemma')

:func:`build_random_model` writes a Hugging Face model directory (``config.json`` of the real
architecture, seeded random weights, a byte-level BPE tokenizer trained here, the family's special
tokens and stop ids, a chat template written here in ``templates/``) that the trainer loads with
``policy.kind=hf policy.path=<dir>`` exactly as it loads a downloaded checkpoint. See
``docs/trainer.md`` (Models you bring) for what each template reproduces.

:func:`resolve_model` (:mod:`trainer.models.registry`) turns a model name (``smollm2-135m-instruct``, shipped
by an installed package), a ``.gguf`` file (dequantised once, cached as safetensors) or a directory into a
local model directory.
"""

from .build import build_random_model, chat_template, default_cache_dir
from .families import FAMILIES, FAMILY_SPECS, SIZES, Family, Size, family
from .registry import NAMED_MODELS, ModelNotFoundError, resolve_model

__all__ = ["FAMILIES", "FAMILY_SPECS", "NAMED_MODELS", "SIZES", "Family", "ModelNotFoundError", "Size",
           "build_random_model", "chat_template", "default_cache_dir", "family", "resolve_model"]
