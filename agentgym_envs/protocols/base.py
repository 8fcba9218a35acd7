"""The action-protocol interface, the protocol registry and the text helpers every protocol shares.

An env has one native action grammar (``go north``, ``search[red shoes]``, ``guess(number=42)``). A protocol
turns what a model actually wrote (plain text, ReAct lines, tags, tool calls) into that native action, tells
the model which format to use (``instructions``) and, for tool calls, which function schemas it may call.
Protocols are pure and stateless: ``parse`` never raises on any input and runs in time linear in its length.

>>> from agentgym_envs.protocols import get_protocol
>>> get_protocol("plain").parse("<think>north looks open</think> go north")
ParsedAction(action='go north', error=None, thought='north looks open')
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
#: A code-fence language tag such as ``text``, ``bash`` or ``c++`` (bounded: no backtracking risk).
_FENCE_LANG = re.compile(r"[\w+#.-]{0,20}")
_QUOTE_PAIRS = {('"', '"'), ("'", "'"), ("`", "`"), ("\u201c", "\u201d"), ("\u2018", "\u2019")}


@dataclass(slots=True)
class ParsedAction:
    """The result of parsing one model reply.

    Exactly one of ``action`` (the env's native action) and ``error`` (what was wrong, naming the
    expected format) is set. ``thought`` holds any reasoning the protocol recognised, else ``None``.
    """

    action: str | None
    error: str | None = None
    thought: str | None = None


class ActionProtocol:
    """Base class of protocols: the reply format a model uses, mapped onto an env's native actions.

    Subclasses implement :meth:`_parse` (given a ``str``), :meth:`instructions` and :meth:`render`;
    tool-call protocols also :meth:`tools`. ``env`` arguments are the *unwrapped* env (or ``None``).
    """

    name: ClassVar[str] = ""
    #: Whether the env's own reply-format sentences (its ``reply_format`` table) stay in the prompt. Only
    #: ``plain``, whose reply *is* the env's native action, lets the env say how to reply; every other
    #: protocol gets the env's neutral wording, so its own :meth:`instructions` are the one format voice.
    shows_env_format: ClassVar[bool] = False

    def parse(self, text: Any, env: Any = None) -> ParsedAction:
        """The native action in ``text``, or an error naming the expected format. Never raises."""
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if not isinstance(text, str):
            return ParsedAction(None, f"Invalid reply: expected a string, got {type(text).__name__}.")
        return self._parse(text, env)

    def _parse(self, text: str, env: Any) -> ParsedAction:
        raise NotImplementedError

    def instructions(self, env: Any = None) -> str:
        """A sentence for the system prompt saying which format to reply in."""
        raise NotImplementedError

    def reminder(self, env: Any = None) -> str | None:
        """One short line that closes the first observation and says what to reply now (``None``: no line).

        Models tend to continue the prompt's last line (``Your move. Legal moves: 1, 2, …``); a closing line
        in the protocol's voice turns that echo into a reply in the right format.
        """
        return None

    def render(self, action: str, env: Any = None, *, thought: str | None = None) -> str:
        """Write a native ``action`` (and optional ``thought``) in this protocol's format; ``parse`` inverts it.

        Scripted experts use this to speak a protocol; it raises ``ValueError`` on a native action it cannot
        express (a programming error, unlike a model's bad reply).
        """
        raise NotImplementedError

    def tools(self, env: Any = None) -> list[dict[str, Any]] | None:
        """OpenAI-style function schemas the model may call (``None`` for protocols without tools)."""
        return None

    def update_step_info(self, info: dict[str, Any], env: Any) -> None:
        """Add protocol-specific keys to the info of a real env step (in place; default: nothing)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# ----------------------------------------------------------------------------- registry
P = TypeVar("P", bound=type[ActionProtocol])
_REGISTRY: dict[str, type[ActionProtocol]] = {}


def register_protocol(cls: P) -> P:
    """Class decorator: make ``cls`` available to :func:`get_protocol` under ``cls.name``."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a non-empty class attribute 'name' to be registered")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"a protocol named {cls.name!r} is already registered ({_REGISTRY[cls.name].__name__})")
    _REGISTRY[cls.name] = cls
    return cls


def protocol_names() -> list[str]:
    """Names accepted by :func:`get_protocol`."""
    return sorted(_REGISTRY)


def get_protocol(protocol: str | ActionProtocol | type[ActionProtocol]) -> ActionProtocol:
    """A protocol instance from a name (``"plain"``, ``"react"``, ``"tags"``, ``"tool_calls"``), class or instance."""
    if isinstance(protocol, ActionProtocol):
        return protocol
    if isinstance(protocol, type) and issubclass(protocol, ActionProtocol):
        return protocol()
    if isinstance(protocol, str) and protocol in _REGISTRY:
        return _REGISTRY[protocol]()
    names = protocol_names()
    close = difflib.get_close_matches(str(protocol), names, n=1) if isinstance(protocol, str) else []
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"unknown action protocol {protocol!r}; expected one of {', '.join(names)} or an ActionProtocol.{hint}")


# ----------------------------------------------------------------------------- shared text helpers
def split_think(text: str) -> tuple[str, str | None, bool]:
    """Remove ``<think>…</think>`` reasoning from ``text``.

    Returns ``(rest, thought, unterminated)``. A ``</think>`` with no opening tag before it closes a block
    that began in the prompt (templates that pre-fill ``<think>``): everything before it is thought.
    An opening ``<think>`` that is never closed makes the rest of the text thought, with ``unterminated``.
    Linear time: ``str.find`` only, no regex.

    >>> split_think("hmm</think>go north")
    ('go north', 'hmm', False)
    >>> split_think("<think>a</think>x<think>b")
    ('x', 'a\\nb', True)
    """
    if "think>" not in text:
        return text, None, False
    thoughts: list[str] = []
    kept: list[str] = []
    pos, unterminated = 0, False
    first_close, first_open = text.find(_THINK_CLOSE), text.find(_THINK_OPEN)
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        thoughts.append(text[:first_close])
        pos = first_close + len(_THINK_CLOSE)
    while True:
        start = text.find(_THINK_OPEN, pos)
        if start < 0:
            kept.append(text[pos:])
            break
        kept.append(text[pos:start])
        end = text.find(_THINK_CLOSE, start + len(_THINK_OPEN))
        if end < 0:
            thoughts.append(text[start + len(_THINK_OPEN):])
            unterminated = True
            break
        thoughts.append(text[start + len(_THINK_OPEN):end])
        pos = end + len(_THINK_CLOSE)
    thought = "\n".join(t.strip() for t in thoughts if t.strip()) or None
    return "".join(kept), thought, unterminated


def unwrap(text: str) -> str:
    """Strip whitespace and one surrounding code fence, backtick pair or quote pair.

    >>> unwrap("```text\\ngo north\\n```"), unwrap('"look"'), unwrap("'a' or 'b'")
    ('go north', 'look', "'a' or 'b'")
    """
    s = text.strip()
    if len(s) >= 6 and s.startswith("```") and s.endswith("```"):
        inner = s[3:-3]
        newline = inner.find("\n")
        if newline >= 0 and _FENCE_LANG.fullmatch(inner[:newline].strip()):
            body = inner[newline + 1:].strip()
            return body if body else inner.strip()
        return inner.strip()
    if len(s) >= 2 and (s[0], s[-1]) in _QUOTE_PAIRS and s[0] not in s[1:-1] and s[-1] not in s[1:-1]:
        return s[1:-1].strip()
    return s


def join_thoughts(*parts: str | None) -> str | None:
    """Non-empty parts joined by newlines, or ``None``."""
    kept = [p for p in parts if p]
    return "\n".join(kept) if kept else None


def last_match(pattern: re.Pattern[str], text: str, end: int | None = None) -> re.Match[str] | None:
    """The last non-overlapping match of ``pattern`` in ``text[:end]`` (one linear scan)."""
    last = None
    for last in pattern.finditer(text, 0, len(text) if end is None else end):
        pass
    return last


def clip(text: str, limit: int = 80) -> str:
    """``repr`` of ``text`` cut to ``limit`` characters, for error messages that quote the model."""
    return repr(text[:limit] + ("…" if len(text) > limit else ""))
