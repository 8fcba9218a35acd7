"""ReAct: ``Thought: …`` then ``Action: <action>``; the last ``Action:`` line is the action.

Accepted markers, case-insensitive: ``Action:``, ``Action 3:`` and ``Act 3:`` (the ReAct paper's numbered
form), with markdown bold (``**Action:**``). The action runs to the end of its line (``search[red shoes]``
included); an empty ``Action:`` line takes the next non-empty line.

>>> r = ReAct()
>>> p = r.parse("Thought: the exit is east.\\nAction: go east")
>>> p.action, p.thought
('go east', 'the exit is east.')
>>> r.parse("Action: look\\nThought: no, better\\nAction 2: search[red shoes]").action
'search[red shoes]'
"""

from __future__ import annotations

import re
from typing import Any

from .base import ActionProtocol, ParsedAction, join_thoughts, last_match, register_protocol, split_think, unwrap

# Bounded quantifiers only: each match attempt costs O(1) however hostile the input.
_MARK = r"(?:[ \t]{0,8}\d{1,6})?[ \t]{0,8}\*{0,2}[ \t]{0,8}:(?:\*\*)?[ \t]{0,8}"
ACTION_MARKER = re.compile(r"\bact(?:ion)?" + _MARK, re.IGNORECASE)
THOUGHT_MARKER = re.compile(r"\bthought" + _MARK, re.IGNORECASE)
_END_OF_LINE = re.compile(r"[\r\n]")
_NON_SPACE = re.compile(r"\S")
_MISSING = "No action found: expected a line 'Action: <action>' after your 'Thought: …'."


def _line_from(text: str, start: int) -> tuple[str, int]:
    """The text from ``start`` to the end of its line, and the index where that line ends."""
    eol = _END_OF_LINE.search(text, start)
    end = eol.start() if eol else len(text)
    return text[start:end], end


@register_protocol
class ReAct(ActionProtocol):
    """``Thought: <reasoning>`` / ``Action: <action>``; ``<think>`` blocks are stripped first."""

    name = "react"

    def _parse(self, text: str, env: Any) -> ParsedAction:
        rest, think, unterminated = split_think(text)
        marker = last_match(ACTION_MARKER, rest)
        if marker is None:
            hint = " The reply ended inside <think>." if unterminated else ""
            return ParsedAction(None, _MISSING + hint, think)
        value, line_end = _line_from(rest, marker.end())
        if not value.strip():
            first = _NON_SPACE.search(rest, line_end)
            if first is not None:
                line_start = max(rest.rfind("\n", line_end, first.start()), rest.rfind("\r", line_end, first.start())) + 1
                value, _ = _line_from(rest, line_start)
        thought = join_thoughts(think, self._thought(rest, marker.start()))
        action = unwrap(value)
        if not action:
            return ParsedAction(None, "The 'Action:' line is empty: expected a line 'Action: <action>'.", thought)
        return ParsedAction(action, None, thought)

    @staticmethod
    def _thought(text: str, end: int) -> str | None:
        marker = last_match(THOUGHT_MARKER, text, end)
        thought = text[marker.end() if marker else 0:end].strip()
        return thought or None

    def instructions(self, env: Any = None) -> str:
        return (
            "Reply in two parts: a line 'Thought: <your reasoning>' and then a final line "
            "'Action: <action>' holding exactly one action."
        )

    def reminder(self, env: Any = None) -> str | None:
        return "Reply with 'Thought: …', then 'Action: <action>' on the last line."

    def render(self, action: str, env: Any = None, *, thought: str | None = None) -> str:
        return f"Thought: {thought or 'I choose my next action.'}\nAction: {action}"
