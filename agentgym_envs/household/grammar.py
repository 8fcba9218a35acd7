"""ALFWorld's command grammar: canonical command text and a forgiving parser.

Canonical forms (what ``info["valid_actions"]`` lists) are ALFWorld's::

    go to X | open X | close X | take X from Y | put X in/on Y | clean X with Y | heat X with Y
    cool X with Y | slice X with Y | use X | examine X | inventory | look

The parser accepts the near misses models actually write: ``put X in Y`` / ``on Y`` / ``into Y``
(ALFWorld users trip over ``in/on``), ``move X to Y`` (ALFWorld 0.4+'s own form), ``pick up X``,
``take X`` (from wherever it is), ``go fridge 1``, articles (``the fridge 1``), glued numbers (``apple1``),
and unnumbered kinds (``open fridge``, resolved against the admissible commands when exactly one fits).

>>> parse("Put the Apple1 into fridge 1.")
Command(verb='put', obj='apple 1', target='fridge 1')
>>> format_command(Command("put", "apple 1", "fridge 1"))
'put apple 1 in/on fridge 1'
>>> parse("dance") is None
True
"""

from __future__ import annotations

import re
from typing import Iterable

from .world import Command

USAGE = (
    "Commands: go to X, open X, close X, take X from Y, put X in/on Y, clean X with Y, heat X with Y, "
    "cool X with Y, slice X with Y, use X, examine X, inventory, look "
    "(X and Y are numbered names such as apple 1 or countertop 2)."
)
#: No command is longer than this; longer text is rejected without running the regexes over it.
MAX_COMMAND_CHARS = 200

_NAME = r"[a-z]+(?: \d+)?"
_PATTERNS: tuple[tuple[re.Pattern[str], str | None], ...] = tuple((re.compile(p), v) for p, v in (
    (rf"go (?:to )?(?P<a>{_NAME})", "go"),
    (rf"(?P<v>open|close) (?P<a>{_NAME})", None),
    (rf"(?:examine|inspect|look at|x) (?P<a>{_NAME})", "examine"),
    (rf"(?:use|toggle|turn on|switch on|turn off|switch off) (?P<a>{_NAME})", "use"),
    (rf"(?:take|pick up|pickup|get|grab) (?P<a>{_NAME})(?: (?:from|off|out of) (?P<b>{_NAME}))?", "take"),
    (rf"(?:put|place|move|drop) (?P<a>{_NAME})(?: (?:in/on|in|on|into|onto|inside|to) (?P<b>{_NAME}))?", "put"),
    (rf"(?P<v>clean|heat|cool|slice) (?P<a>{_NAME})(?: (?:with|using|in|on) (?P<b>{_NAME}))?", None),
    (r"inventory|inv|i", "inventory"),
    (r"look|l|look around", "look"),
))
_CONNECTIVES = frozenset({"to", "from", "in", "on", "into", "onto", "with", "using", "off"})
_ARTICLES = re.compile(r"\b(?:the|a|an|some)\s+")
_GLUED_NUMBER = re.compile(r"([a-z])(\d+)\b")
_SPACES = re.compile(r"\s+")


def format_command(command: Command) -> str:
    """The canonical ALFWorld text of ``command``."""
    verb, obj, target = command
    if verb == "go":
        return f"go to {obj}"
    if verb == "take":
        return f"take {obj} from {target}"
    if verb == "put":
        return f"put {obj} in/on {target}"
    if verb in ("clean", "heat", "cool", "slice"):
        return f"{verb} {obj} with {target}"
    if obj is not None:
        return f"{verb} {obj}"
    return verb


def normalise(text: str) -> str:
    """Lower-case, single spaces, no trailing punctuation, no articles, ``apple1`` -> ``apple 1``."""
    text = _SPACES.sub(" ", text.lower()).strip().rstrip(".!?").strip()
    return _GLUED_NUMBER.sub(r"\1 \2", _ARTICLES.sub("", text))


def is_move(text: str) -> bool:
    """Whether ``text`` is written as ALFWorld 0.4+'s ``move X to Y`` (answered "You move the X to the Y.")."""
    return len(text) <= MAX_COMMAND_CHARS and normalise(text).startswith("move ")


def parse(text: str) -> Command | None:
    """Parse free text into a :class:`Command` (names may be unnumbered or missing), or ``None``."""
    if len(text) > MAX_COMMAND_CHARS:
        return None
    text = normalise(text)
    for pattern, verb in _PATTERNS:
        match = pattern.fullmatch(text)
        if match is not None:
            groups = match.groupdict()
            if groups.get("a") in _CONNECTIVES or groups.get("b") in _CONNECTIVES:
                return None  # "go to", "take from": a connective read as a name
            return Command(verb or groups["v"], groups.get("a"), groups.get("b"))
    return None


def matches(partial: Command, full: Command) -> bool:
    """Whether a parsed command could mean the admissible command ``full``.

    A missing name matches anything; an unnumbered name (``fridge``) matches any instance of that kind.
    """
    if partial.verb != full.verb:
        return False
    return _name_fits(partial.obj, full.obj) and _name_fits(partial.target, full.target)


def resolve(partial: Command, admissible: Iterable[Command]) -> list[Command]:
    """The admissible commands that ``partial`` could mean (exact matches win outright)."""
    candidates = [c for c in admissible if matches(partial, c)]
    exact = [c for c in candidates if c == partial]
    return exact or candidates


def _name_fits(given: str | None, actual: str | None) -> bool:
    if given is None or given == actual:
        return True
    if actual is None or given[-1].isdigit():
        return False
    return actual.rsplit(" ", 1)[0] == given
