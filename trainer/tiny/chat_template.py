"""The tiny policy's chat template and special tokens.

Every message renders as ``<|role|>\\n{content}<|end|>\\n`` and the generation prompt is
``<|assistant|>\\n``, so a reply the model ends with ``<|end|>`` is followed, in the next turn's rendering,
by exactly ``\\n<|user|>\\n…``: each turn's text extends the last one (the prefix-extension invariant that
:mod:`trainer.trajectory` asserts). Nothing is stripped or rewritten in earlier turns.

>>> render_chat([{"role": "user", "content": "hi"}], add_generation_prompt=True)
'<|user|>\\nhi<|end|>\\n<|assistant|>\\n'
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

PAD, END, SYSTEM, USER, ASSISTANT = "<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"
SPECIAL_TOKENS = (PAD, END, SYSTEM, USER, ASSISTANT)

CHAT_TEMPLATE = (
    "{% for m in messages %}{{ '<|' + m['role'] + '|>\\n' + m['content'] + '<|end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)


@cache
def _compiled() -> Any:
    import jinja2

    return jinja2.Environment().from_string(CHAT_TEMPLATE)


def render_chat(messages: Sequence[dict[str, str]], *, add_generation_prompt: bool) -> str:
    """The template applied with plain jinja2 (what ``tokenizer.apply_chat_template`` does, without a tokenizer)."""
    return _compiled().render(messages=list(messages), add_generation_prompt=add_generation_prompt)
