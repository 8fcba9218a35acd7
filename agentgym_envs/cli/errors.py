"""Which failures of a command are the user's to fix, and the one line that says so.

``agentgym`` (:mod:`agentgym_envs.cli.main`) runs every subcommand through :func:`user_error_line`: a mistake a
person can act on (an unknown env id or protocol, a missing file or model directory, a missing extra, a port in
use) is printed as ``agentgym COMMAND: what is wrong; what to do`` on stderr with exit status 2 and no
traceback. Anything else is a bug and keeps its traceback (``agentgym --debug …`` shows one for user errors
too). Subcommands raise :class:`UsageError` for mistakes only they can recognise.
"""

from __future__ import annotations

import errno
import os
import socket

from ..core.errors import AgentGymError, UnknownEnvError
from ..extras import MissingExtra, extra_providing, install_hint

#: a part's (top-level package's) own extras, asked first when a module several extras provide is missing
_PART_EXTRAS = {"trainer": ("train",), "leaderboards": ("leaderboards", "export"), "meta_envs": ("skills",)}


class UsageError(AgentGymError):
    """A mistake on the command line; the message says what is wrong and what to do."""


def user_error_line(exc: BaseException, command_module: str) -> str | None:
    """The one-line message for ``exc`` if it is a user mistake, else None (a bug: show the traceback)."""
    if isinstance(exc, (UsageError, UnknownEnvError, MissingExtra)):
        return _one_line(str(exc))
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        prefer = _PART_EXTRAS.get(command_module.partition(".")[0], ())
        extra = extra_providing(exc.name.split(".")[0], prefer)
        if extra:
            return f"No module named {exc.name!r}: this command needs the {extra!r} extra: {install_hint(extra)}"
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def require_file(path: str, what: str, remedy: str) -> None:
    """Raise :class:`UsageError` unless ``path`` is an existing file."""
    if not os.path.isfile(path):
        state = "is a directory" if os.path.isdir(path) else "does not exist"
        raise UsageError(f"{what} {path!r} {state}; {remedy}")


def require_model_dir(path: str, flag: str) -> None:
    """Raise :class:`UsageError` unless ``path`` is a local model directory (one with a ``config.json``)."""
    if not os.path.isdir(path):
        raise UsageError(f"{flag} {path!r}: no such directory; give a local Hugging Face model directory "
                         "(with config.json), or --tiny")
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise UsageError(f"{flag} {path!r} has no config.json: not a Hugging Face model directory "
                         "(save one with model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR))")


def require_free_port(host: str, port: int) -> None:
    """Raise :class:`UsageError` if ``host:port`` cannot be bound now: checked before a model loads for seconds.

    Port 0 (the OS picks one) always passes."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server binds: TIME_WAIT is free
        try:
            probe.bind((host, port))
        except OSError as e:
            why = "is already in use" if e.errno == errno.EADDRINUSE else f"cannot be bound ({e.strerror})"
            raise UsageError(f"port {port} on {host} {why}; stop what listens there or pick another --port "
                             "(--port 0 lets the OS choose)") from e


def require_protocol(name: str | None, *, also: tuple[str, ...] = ()) -> None:
    """Raise :class:`UsageError` unless ``name`` is None, a registered action protocol, or one of ``also``."""
    import difflib

    from ..protocols import protocol_names

    known = [*also, *protocol_names()]
    if name is None or name in known:
        return
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(known)}"
    raise UsageError(f"unknown action protocol {name!r}; {hint} (--protocol)")
