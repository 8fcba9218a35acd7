"""Plain text: the whole reply is the action, after removing reasoning and wrapping.

>>> p = PlainText()
>>> p.parse("```\\ngo north\\n```").action, p.parse(" 'look' ").action
('go north', 'look')
>>> p.parse("<think>only thinking</think>").error is not None
True
"""

from __future__ import annotations

from typing import Any

from .base import ActionProtocol, ParsedAction, register_protocol, split_think, unwrap


@register_protocol
class PlainText(ActionProtocol):
    """The reply, minus ``<think>…</think>``, surrounding whitespace and one code fence or quote pair."""

    name = "plain"
    #: The env's own text is the prompt, unchanged (models trained under ``plain``, the quickstart's, keep it).
    shows_env_format = True

    def _parse(self, text: str, env: Any) -> ParsedAction:
        rest, thought, unterminated = split_think(text)
        action = unwrap(rest)
        if action:
            return ParsedAction(action, None, thought)
        if unterminated:
            error = "The reply ended inside <think> without an action: close it with </think>, then write the action."
        elif thought is not None:
            error = "The reply holds only reasoning (<think>…</think>) and no action: write the action after </think>."
        else:
            error = "The reply is empty: expected the action as plain text."
        return ParsedAction(None, error, thought)

    def instructions(self, env: Any = None) -> str:
        return "Reply with the action only, as plain text, without explanation or formatting."

    def render(self, action: str, env: Any = None, *, thought: str | None = None) -> str:
        return f"<think>{thought}</think>\n{action}" if thought else action
