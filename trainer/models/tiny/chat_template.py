"""The tiny policy's chat template and special tokens.

Every message renders as ``<|role|>\\n{content}<|end|>\\n`` and the generation prompt is
``<|assistant|>\\n``, so a reply the model ends with ``<|end|>`` is followed, in the next turn's rendering,
by exactly ``\\n<|user|>\\n…``: each turn's text extends the last one (the prefix-extension invariant that
:mod:`trainer.collect.trajectory` asserts). Nothing is stripped or rewritten in earlier turns.

Tools (a format of our own, for the ``tool_calls`` protocol): with ``tools`` the system turn ends with
``Tools:`` and one JSON schema per line (a system turn holding only them when the chat has no system
message); a ``tool`` message renders as ``<|tool|>\\n{result}<|end|>\\n`` like any other role. The model calls
a tool by writing ``<tool_call>{json}</tool_call>`` as its reply. Without tools nothing changes, so the
tiny tokenizer, its corpus and every run on plain protocols are as before (no new special token).

Structured tool calls (an assistant message with ``tool_calls``, as TRL's ``GRPOTrainer`` and OpenAI-style
chats carry them) render as the text the model writes for them: the content, then each call as
``<tool_call>\n{"name": …, "arguments": …}\n</tool_call>``, newline-separated, as
:func:`trainer.models.backends.openai_http.tool_calls_text` writes them. :data:`RESPONSE_TEMPLATE` is the
transformers ``response_template`` that parses such a reply back into ``content`` and ``tool_calls``
(``tokenizer.parse_response``); with both, TRL recognises the template as tool-capable.

>>> render_chat([{"role": "user", "content": "hi"}], add_generation_prompt=True)
'<|user|>\\nhi<|end|>\\n<|assistant|>\\n'
>>> tools = [{"type": "function", "function": {"name": "go"}}]
>>> print(render_chat([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "<tool_call>{}</tool_call>"},
...                    {"role": "tool", "content": "ok"}], add_generation_prompt=True, tools=tools))
<|system|>
Tools:
{"type": "function", "function": {"name": "go"}}<|end|>
<|user|>
hi<|end|>
<|assistant|>
<tool_call>{}</tool_call><|end|>
<|tool|>
ok<|end|>
<|assistant|>
<BLANKLINE>
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

PAD, END, SYSTEM, USER, ASSISTANT = "<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"
SPECIAL_TOKENS = (PAD, END, SYSTEM, USER, ASSISTANT)

CHAT_TEMPLATE = (
    "{% set system_has_tools = tools and messages and messages[0]['role'] == 'system' %}"
    "{% if tools %}{{ '<|system|>\\n' }}{% if system_has_tools %}{{ messages[0]['content'] + '\\n\\n' }}{% endif %}"
    "{{ 'Tools:' }}{% for t in tools %}{{ '\\n' + (t | tojson) }}{% endfor %}{{ '<|end|>\\n' }}{% endif %}"
    "{% for m in messages %}{% if not (loop.first and system_has_tools) %}"
    "{{ '<|' + m['role'] + '|>\\n' + (m['content'] or '') }}{% if m['tool_calls'] %}"
    "{% for c in m['tool_calls'] %}{% set f = c['function'] if c['function'] is defined else c %}"
    "{{ '\\n' if (m['content'] or not loop.first) else '' }}{{ '<tool_call>\\n{\"name\": ' + (f['name'] | tojson) }}"
    "{{ ', \"arguments\": ' + (f['arguments'] if f['arguments'] is string else (f['arguments'] | tojson)) + '}' }}"
    "{{ '\\n</tool_call>' }}{% endfor %}{% endif %}{{ '<|end|>\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

#: transformers' ``response_template``: a reply after ``<|assistant|>\n`` is ``<tool_call>`` JSON blocks (each
#: ``{"name", "arguments"}``, parsed into OpenAI-style ``tool_calls``) and text content, up to ``<|end|>``.
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": ASSISTANT + "\n",
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*", "repeats": True, "content": "json",
                       "transform": {"type": "function", "function": "{content}"}},
        "content": {"close_pattern": r"<\|end\|>\s*", "content": "text"},
    },
}


@cache
def _compiled() -> Any:
    import jinja2

    env = jinja2.Environment()
    # transformers' chat-template ``tojson``: plain json.dumps (jinja2's own escapes <, >, & and ' for HTML)
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    return env.from_string(CHAT_TEMPLATE)


def render_chat(messages: Sequence[dict[str, str]], *, add_generation_prompt: bool,
                tools: Sequence[dict[str, Any]] | None = None) -> str:
    """The template applied with plain jinja2 (what ``tokenizer.apply_chat_template`` does, without a tokenizer)."""
    return _compiled().render(messages=list(messages), add_generation_prompt=add_generation_prompt,
                              tools=list(tools) if tools is not None else None)
