"""Which text may reach the TextWorld interpreter (pure; no ``textworld`` import).

The Z-machine interpreter under textworld is not safe against arbitrary input, measured with textworld 1.7
and jericho 3.3: a NUL character hangs it for good; a lone surrogate raises ``UnicodeEncodeError``; a newline
or carriage return queues the rest of the line as the *next* turn's input, so observations drift one turn
out of step; input beyond 198 bytes is cut; ``.`` and ``then`` chain several commands into one turn; and
meta verbs (``restart``, ``quit``, ``save``, ``restore``, ``script``, textworld's own ``tw-*`` debug
commands) open prompts, write files or switch off the event tracing that textworld's scores rely on.

So a command is normalised (whitespace runs, newlines included, become one space; lower case, which Inform
ignores anyway) and then must be either one of the currently admissible commands or: at most
``MAX_COMMAND_CHARS`` characters of ``a-z 0-9 ' -`` and spaces, a single command (no ``then``), starting with
one of the game's verbs. Everything else is rejected with a reason before it reaches the game.
"""

from __future__ import annotations

import re
from collections.abc import Collection

MAX_COMMAND_CHARS = 160
_ALLOWED = re.compile(r"[a-z0-9' \-]*")
_NOT_ALLOWED = re.compile(r"[^a-z0-9' \-]")


def normalise(text: str) -> str:
    """Collapse every whitespace run (newlines included) to one space and lower-case the command."""
    return " ".join(text.split()).lower()


def command_problem(command: str, verbs: Collection[str]) -> str | None:
    """Why normalised ``command`` may not be sent to the game, or ``None`` when it may."""
    if len(command) > MAX_COMMAND_CHARS:
        return (f"That command is {len(command):,} characters long; TextWorld commands are short (at most "
                f"{MAX_COMMAND_CHARS}), e.g. 'take key from table'.")
    if not _ALLOWED.fullmatch(command):
        bad = _NOT_ALLOWED.search(command).group()
        return (f"TextWorld understands plain words only (letters, digits, spaces, ' and -); {bad!r} is not "
                "allowed. Type one command such as 'open door'.")
    words = command.split(" ")
    if "then" in words:
        return "One command per turn: send the part before 'then' now and the rest next turn."
    if words[0] not in verbs:
        return f"This game does not know the verb {words[0]!r}. Commands start with: {', '.join(sorted(verbs))}."
    return None
