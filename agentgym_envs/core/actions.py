"""Turning whatever a caller passed as an action into the text an env parses: one implementation.

Policies hand envs all sorts of things: ``str``, ``bytes`` from a socket, ``numpy.str_`` from a batch,
``None`` from a failed generation, megabytes of runaway text, lone surrogates from a bad decoder.
:func:`coerce_action` makes any of them either a stripped string that is safe to forward as UTF-8 (to
pipes, sockets, browsers), or a reason it cannot be used. It never raises. Both
:class:`~agentgym_envs.core.text_env.TextEnv` and the multi-agent adapter use it; each words the
reason for its own observation ("Invalid action: …", "… forfeits the game").

>>> coerce_action(b"  go north \\n", 100)
CoercedAction(text='go north', problem=None, kind=None)
>>> coerce_action(None, 100).problem
'expected a string, got NoneType'
>>> coerce_action("x" * 101, 100, noun="move").problem
'the move is 101 characters long; the limit is 100'
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

Rejection = Literal["not_text", "too_long", "empty"]


class CoercedAction(NamedTuple):
    """The usable text of an action, or why there is none."""

    text: str
    """Stripped, UTF-8-safe (lone surrogates replaced by U+FFFD); ``""`` when rejected."""
    problem: str | None
    """Why the action cannot be used, as a clause ("the action is empty"); ``None`` when it can."""
    kind: Rejection | None
    """Which check failed, so that callers can add their own advice (legal moves, a length hint)."""


def coerce_action(action: Any, max_chars: int, *, noun: str = "action") -> CoercedAction:
    """``action`` as text of at most ``max_chars`` characters, stripped, or the reason it is unusable.

    ``bytes`` are decoded as UTF-8 (bad bytes become U+FFFD); other non-strings are rejected. The length
    limit applies before stripping, so a flood of whitespace is rejected too.
    """
    if isinstance(action, bytes):
        action = action.decode("utf-8", errors="replace")
    if not isinstance(action, str):
        return CoercedAction("", f"expected a string, got {type(action).__name__}", "not_text")
    if len(action) > max_chars:
        return CoercedAction("", f"the {noun} is {len(action):,} characters long; the limit is {max_chars:,}", "too_long")
    text = str(action).strip()  # str(): a numpy.str_ becomes a plain str
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _LONE_SURROGATE.sub("\ufffd", text)
    if not text:
        return CoercedAction("", f"the {noun} is empty", "empty")
    return CoercedAction(text, None, None)
