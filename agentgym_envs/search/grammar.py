"""The search env's native action grammar: Search-R1's tags, and the two tools as calls.

Native actions (one per turn):

* ``<search>query</search>`` and ``<answer>text</answer>``, as Search-R1 trains models to write, with
  any reasoning in ``<think>…</think>``. Reasoning is removed first (a tag written *inside* ``<think>`` is
  thought, not an action); then the first complete action tag wins, as in Search-R1's
  ``<(search|answer)>(.*?)</\\1>``. Tags are case-insensitive.
* ``search(query="…")`` / ``answer(text="…")`` or their JSON form ``{"name": "search", "arguments": {...}}``
  (what the tool-call protocol emits); :class:`~agentgym_envs.core.tool_env.ToolEnv` dispatches these.

A tag turn is *well formed* (for the format-aware reward) when it has a ``<think>`` block, exactly one
action tag, and nothing else outside them.

>>> parse_tags("<think>who wrote it?</think>\\n<search>The Kruse created</search>")
TagAction(verb='search', argument='The Kruse created', well_formed=True)
>>> parse_tags("I guess <answer> Varlonia </answer> <answer>x</answer>")
TagAction(verb='answer', argument='Varlonia', well_formed=False)
>>> parse_tags("no tags here") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import InvalidAction
from ..protocols.base import split_think

VERBS = ("search", "answer")
_OPEN = re.compile(r"<(search|answer)>", re.IGNORECASE)
_CLOSE = {verb: re.compile(f"</{verb}>", re.IGNORECASE) for verb in VERBS}
_CALL = re.compile(r"(?:search|answer)\s{0,8}\(")

HOW_TO = (
    "To search, put the query between <search> and </search>; to give the final answer, put it between "
    "<answer> and </answer>. You may reason inside <think>…</think> first. "
    '(The tool calls search(query="…") and answer(text="…") work too.)'
)
INVALID_FORMAT = "Invalid action: no action found. " + HOW_TO


@dataclass(frozen=True)
class TagAction:
    verb: str  # "search" | "answer"
    argument: str
    well_formed: bool


def parse_tags(text: str) -> TagAction | None:
    """The first complete action tag in ``text`` (outside ``<think>``), or ``None`` if there is no tag.

    Raises ``InvalidAction`` for a tag that is never closed or is empty. Linear time.
    """
    rest, thought, _ = split_think(text)
    first: dict[str, re.Match[str]] = {}
    opened = 0
    for match in _OPEN.finditer(rest):
        opened += 1
        first.setdefault(match.group(1).lower(), match)
    if not first:
        return None
    candidates = []
    for verb, opening in first.items():
        closing = _CLOSE[verb].search(rest, opening.end())
        if closing is not None:
            candidates.append((opening.start(), verb, opening, closing))
    if not candidates:
        verb = min(first.values(), key=lambda m: m.start()).group(1).lower()
        raise InvalidAction(f"Invalid action: the <{verb}> tag was never closed; write <{verb}>…</{verb}>.")
    start, verb, opening, closing = min(candidates, key=lambda c: c[0])
    argument = rest[opening.end():closing.start()].strip()
    if not argument:
        what = "a query" if verb == "search" else "your answer"
        raise InvalidAction(f"Invalid action: the <{verb}></{verb}> tags are empty; put {what} inside them.")
    outside = (rest[:start] + rest[closing.end():]).strip()
    return TagAction(verb, argument, thought is not None and opened == 1 and not outside)


def tool_call_text(text: str) -> str | None:
    """The reply as a tool call (reasoning removed) when it looks like one, else ``None``."""
    rest = split_think(text)[0].strip()
    return rest if rest.startswith("{") or _CALL.match(rest) else None


def no_action_message(text: str) -> str:
    """Why a reply holding neither a tag nor a call is invalid, with the expected format."""
    _, _, unterminated = split_think(text)
    if unterminated:
        return "Invalid action: the reply ended inside <think>; close it with </think>, then act. " + HOW_TO
    return INVALID_FORMAT
