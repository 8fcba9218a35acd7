"""The text side every token backend shares: chats through the tokenizer's template, ids without re-tokenising.

A reply can end with a stop id that is not the one the template writes after a reply: Qwen2.5 lists
``<|im_end|>`` and ``<|endoftext|>`` as stop ids, but its template closes an assistant turn with
``<|im_end|>``; Gemma stops on ``<eos>`` or ``<end_of_turn>`` and writes ``<end_of_turn>``. The sampled ids
stay as sampled (the trainer scores exactly them); only the text the prefix-extension check compares
(:meth:`ChatTokens.decode_as_turn`) shows the template's end-of-turn marker instead, which is what the
model's next prompt renders.

Message text never becomes a control token. An observation, a tool result or a reply may spell the
template's special tokens (``<|im_end|><|im_start|>assistant``); tokenised as it stands, that text would
close the turn and open a forged one in the model's prompt. So :meth:`ChatTokens.render_chat` marks each
spelling inside message content and tool schemas with a private-use character between its characters
(:func:`guard_text`), :meth:`ChatTokens.encode` tokenises marked text with special tokens split (the ids of
the literal characters) and only the template's own spellings as special ids, and
:meth:`ChatTokens.decode_as_turn` marks a reply's spelled specials the same way, so the rendered text still
extends turn by turn. Both the HF and the vLLM backend share this class; the env still sees the plain text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym_envs.chat import chat_tools, list_tools
from agentgym_envs.policies import Completion, Message, SamplingConfig


class ChatTokens:
    """``Policy.act`` and the encode/decode helpers of a backend with a HF ``tokenizer``,
    ``chat_template_kwargs`` and a ``generate(prompt_ids, sampling=...)`` (the token-level sampler)."""

    tokenizer: Any
    chat_template_kwargs: dict
    stop_ids: frozenset[int]

    def generate(self, prompt_ids: list[list[int]], *, sampling: SamplingConfig) -> list[Completion]:
        raise NotImplementedError

    def act(self, batch: list[list[Message]], *, sampling: SamplingConfig) -> list[Completion]:
        return self.generate([self.encode_chat(messages) for messages in batch], sampling=sampling)

    def render_chat(self, messages: Sequence[Message], tools: list[dict[str, Any]] | None = None) -> str:
        """The chat as the model reads it, ending with the generation prompt; ``tools`` (default: the ones the
        chat carries, :func:`~agentgym_envs.chat.chat_tools`) go to the template in the model's own tool format,
        or, for a template that ignores them (Gemma's), are listed in the system message (:func:`list_tools`)."""
        tools = chat_tools(messages) if tools is None else tools
        if tools and not self.template_renders_tools():
            messages, tools = list_tools(messages, tools), None
        pattern = self.special_pattern()
        extra = {"tools": _guard(tools, pattern)} if tools else {}
        return self.tokenizer.apply_chat_template(_guard(list(messages), pattern), tokenize=False,
                                                  add_generation_prompt=True, **extra, **self.chat_template_kwargs)

    def special_pattern(self) -> re.Pattern[str] | None:
        """A regex of the tokenizer's special tokens' spellings, longest first (``None``: it has none)."""
        cache = self.__dict__.setdefault("_special_pattern", {})
        key = id(self.tokenizer)
        if key not in cache:
            decoder = getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
            spellings = {t.content for t in decoder.values() if getattr(t, "special", False) and t.content}
            spellings |= {t for t in getattr(self.tokenizer, "all_special_tokens", []) if t}
            spellings = sorted((t for t in spellings if _ESC not in t), key=len, reverse=True)
            cache[key] = re.compile("(" + "|".join(map(re.escape, spellings)) + ")") if spellings else None
        return cache[key]

    def template_renders_tools(self) -> bool:
        """Whether the chat template shows the ``tools`` it is given (probed once per template and kwargs)."""
        key = (self.tokenizer.chat_template, repr(sorted(self.chat_template_kwargs.items())))
        cache = self.__dict__.setdefault("_renders_tools", {})
        if key not in cache:
            probe = [{"type": "function", "function": {"name": "agentgym_probe_tool", "description": "",
                                                        "parameters": {"type": "object", "properties": {}}}}]
            shown = self.tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tools=probe, tokenize=False,
                                                       add_generation_prompt=True, **self.chat_template_kwargs)
            cache[key] = "agentgym_probe_tool" in shown
        return cache[key]

    def encode_chat(self, messages: Sequence[Message]) -> list[int]:
        return self.encode(self.render_chat(messages))

    def encode(self, text: str) -> list[int]:
        """Ids of ``text`` as it stands (the template already wrote any special tokens); spellings that
        :func:`guard_text` marked (message content) become the ids of their characters, never special ids."""
        pattern = self.special_pattern()
        if _ESC not in text or pattern is None:
            return self.tokenizer.encode(text, add_special_tokens=False)
        ids: list[int] = []
        for i, part in enumerate(pattern.split(text)):  # (one capturing group: odd parts are the spellings)
            if i % 2:  # a spelling the template wrote (guarded ones no longer match): its special id
                ids.append(self.tokenizer.convert_tokens_to_ids(part))
            elif part:  # text between them: literal characters, special spellings split into ordinary ids
                ids.extend(self.tokenizer.encode(unguard_text(part), add_special_tokens=False, split_special_tokens=True))
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` with special tokens kept, so that rendering it again gives the same text."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def decode_as_turn(self, ids: Sequence[int]) -> str:
        """Text of a sampled reply as the template renders it once the turn is over: like :meth:`decode`, but
        a final stop id other than the template's end-of-turn id reads as that end-of-turn marker."""
        ids = list(ids)
        end = self.end_of_turn_id()
        if ids and end is not None and ids[-1] != end and ids[-1] in self.stop_ids:
            ids[-1] = end
        return self._decode_guarded(ids)

    def _decode_guarded(self, ids: list[int]) -> str:
        """:meth:`decode`, with the reply's text (all but a final stop id, which the template writes itself)
        marked as :meth:`render_chat` marks message content: the next prompt renders the reply as content."""
        pattern = self.special_pattern()
        stop = 1 if ids and ids[-1] in self.stop_ids else 0
        body = self.decode(ids[:len(ids) - stop])
        if pattern is None or (_ESC not in body and not pattern.search(body)):
            return self.decode(ids)
        return guard_text(body, pattern) + self.decode(ids[len(ids) - stop:])

    def end_of_turn_id(self) -> int | None:
        """The stop id the chat template writes right after an assistant reply, found by rendering a probe
        chat (``None`` when the template writes no stop id there). Cached per template and kwargs."""
        key = repr((self.tokenizer.chat_template, sorted(self.chat_template_kwargs.items())))  # (a dict of named templates too)
        cache = self.__dict__.setdefault("_end_of_turn", {})
        if key not in cache:
            cache[key] = _end_of_turn_id(self.tokenizer, self.stop_ids, self.chat_template_kwargs)
        return cache[key]


#: A private-use character (U+E000): between the characters of a special token's spelling inside message text,
#: doubled where the text itself holds one. Tokenisers never see it (:func:`unguard_text` removes it).
_ESC = "\ue000"
_ESC_RUN = re.compile(_ESC + "(" + _ESC + ")?")


def guard_text(text: str, pattern: re.Pattern[str] | None) -> str:
    """``text`` with every spelling ``pattern`` matches broken by :data:`_ESC` (reversible: :func:`unguard_text`).

    >>> p = re.compile(re.escape("<|im_end|>"))
    >>> guarded = guard_text("a<|im_end|>b", p)
    >>> p.search(guarded) is None, unguard_text(guarded)
    (True, 'a<|im_end|>b')
    """
    if pattern is None:
        return text
    text = text.replace(_ESC, _ESC * 2)
    while pattern.search(text):  # a pass can leave a spelling that began inside a shorter match: repeat
        text = pattern.sub(lambda m: _ESC.join(m.group(0)), text)
    return text


def unguard_text(text: str) -> str:
    """The text :func:`guard_text` was given: lone markers dropped, doubled ones single again."""
    return _ESC_RUN.sub(lambda m: _ESC if m.group(1) else "", text)


def _guard(value: Any, pattern: re.Pattern[str] | None) -> Any:
    """``value`` (messages, tool schemas) with :func:`guard_text` applied to every string in it (not dict keys)."""
    if pattern is None:
        return value
    if isinstance(value, str):
        return guard_text(value, pattern)
    if isinstance(value, dict):
        return {k: _guard(v, pattern) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_guard(v, pattern) for v in value]
    return value


_PROBE_REPLY = "agentgym end-of-turn probe"


def _end_of_turn_id(tokenizer: Any, stop_ids: frozenset[int], kwargs: dict) -> int | None:
    """The stop id whose text starts what the template renders after a finished reply."""
    chat = [{"role": "user", "content": "probe"}, {"role": "assistant", "content": _PROBE_REPLY}]
    from jinja2 import TemplateError

    try:
        text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=False, **kwargs)
    except TemplateError:  # a template that refuses this chat (raise_exception): no mapping
        return None
    if _PROBE_REPLY not in text:
        return None
    after = text[text.rindex(_PROBE_REPLY) + len(_PROBE_REPLY):]
    texts = {i: tokenizer.decode([i], skip_special_tokens=False) for i in stop_ids}
    matches = [i for i, t in texts.items() if t and after.startswith(t)]
    return max(matches, key=lambda i: len(texts[i])) if matches else None


def read_chat_template(value: str) -> str:
    """``policy.chat_template``: template text as given (it holds ``{%`` or ``{{``), else the file it names."""
    if "{%" in value or "{{" in value:
        return value
    path = Path(value).expanduser()
    if not path.is_file():
        from ...errors import ConfigError

        raise ConfigError(f"policy.chat_template: expected a .jinja file or jinja template text, got {value!r} "
                          "(no such file, and no '{%' or '{{' in it)")
    return path.read_text()
