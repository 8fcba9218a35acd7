"""Tags: the action inside ``<action>…</action>`` (tag name configurable); the last complete pair wins.

>>> t = Tags()
>>> t.parse("<think>east?</think>I'll try <action>go east</action>").action
'go east'
>>> t.parse("<action>look</action> or rather <ACTION>go west</ACTION>").action
'go west'
>>> Tags(tag="answer").parse("<answer>42").error
'The <answer> tag was never closed: expected the action inside <answer>…</answer>.'
"""

from __future__ import annotations

import re
from typing import Any

from .base import ActionProtocol, ParsedAction, join_thoughts, last_match, register_protocol, split_think, unwrap

_TAG_NAME = re.compile(r"[A-Za-z][\w.-]{0,31}")


@register_protocol
class Tags(ActionProtocol):
    """``<tag>action</tag>`` anywhere in the reply (case-insensitive tag); text outside is ignored."""

    name = "tags"

    def __init__(self, tag: str = "action"):
        if not isinstance(tag, str) or not _TAG_NAME.fullmatch(tag):
            raise ValueError(f"tag must be a simple XML name such as 'action' or 'answer', got {tag!r}")
        self.tag = tag
        self._open = re.compile(f"<{re.escape(tag)}>", re.IGNORECASE)
        self._close = re.compile(f"</{re.escape(tag)}>", re.IGNORECASE)
        self._format = f"<{tag}>…</{tag}>"

    def _parse(self, text: str, env: Any) -> ParsedAction:
        rest, thought, unterminated = split_think(text)
        close = last_match(self._close, rest, len(rest))
        opening = last_match(self._open, rest, close.start()) if close is not None else None
        if opening is None:
            return ParsedAction(None, self._missing(rest, unterminated), thought)
        action = unwrap(rest[opening.end():close.start()])
        if not action:
            return ParsedAction(None, f"The {self._format} tags are empty: put one action inside them.", thought)
        outside = rest[:opening.start()].strip()
        return ParsedAction(action, None, join_thoughts(thought, outside or None))

    def _missing(self, text: str, unterminated: bool) -> str:
        if self._open.search(text) is not None:
            return f"The <{self.tag}> tag was never closed: expected the action inside {self._format}."
        hint = " The reply ended inside <think>." if unterminated else ""
        return f"No action found: expected the action inside {self._format}.{hint}"

    def instructions(self, env: Any = None) -> str:
        example = f"<{self.tag}>your action</{self.tag}>"
        return f"You may reason first; then give exactly one action inside {self._format} tags, e.g. {example}."

    def reminder(self, env: Any = None) -> str | None:
        return f"Reply with your action inside {self._format}."

    def render(self, action: str, env: Any = None, *, thought: str | None = None) -> str:
        prefix = f"{thought}\n" if thought else ""
        return f"{prefix}<{self.tag}>{action}</{self.tag}>"

    def __repr__(self) -> str:
        return f"Tags(tag={self.tag!r})"
