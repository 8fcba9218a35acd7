"""Random-weight models of real architectures, built locally (no download), for tests and benchmarks.

>>> from trainer.models import FAMILIES
>>> FAMILIES
('qwen2', 'qwen3', 'llama3', 'gemma')

:func:`build_random_model` writes a Hugging Face model directory (``config.json`` of the real
architecture, seeded random weights, a byte-level BPE tokenizer trained here, the family's special
tokens and stop ids, a chat template written here in ``templates/``) that the trainer loads with
``policy.kind=hf policy.path=<dir>`` exactly as it loads a downloaded checkpoint. See
``docs/trainer.md`` (Models you bring) for what each template reproduces.
"""

from .build import build_random_model, chat_template, default_cache_dir
from .families import FAMILIES, FAMILY_SPECS, SIZES, Family, Size, family

__all__ = ["FAMILIES", "FAMILY_SPECS", "SIZES", "Family", "Size", "build_random_model", "chat_template",
           "default_cache_dir", "family"]
