"""Offline rules: what an imported task's ``RUN`` steps and test scripts become where no network is.

Real Terminal-Bench and Harbor tasks install their tools when the image is built or when the tests start
(``apt-get install``, ``pip install``, ``curl … | sh`` for ``uv``, ``uv add pytest``, ``uvx pytest``). The
sandboxes have no network, but their image already holds the toolset those lines are after (see
``sandboxes.image.ROOTFS_PACKAGES``). So each shell command is rewritten by the first rule that matches:

============== ======================================================= ==========================================
rule           matches                                                 becomes
============== ======================================================= ==========================================
apt            ``apt-get update/upgrade/clean``, ``add-apt-repository``, ``true``
               ``update-alternatives``, ``rm -rf /var/lib/apt/lists``
apt-install    ``apt-get install PKG…``                                ``true``; the report lists which PKGs the
                                                                       image has and which it lacks
installer      ``curl|wget … | sh`` (uv, rustup, nvm installers)       ``true``
uv-env         ``source $HOME/.local/bin/env`` (uv's, cargo's)         ``true``
uv-project     ``uv init/venv/add/sync/lock/pip install``              ``true``
uv-run         ``uv run CMD``, ``uvx [--with X]… pytest ARGS``         ``CMD``; ``python3 -m pytest ARGS``
pip            ``pip/pip3/python -m pip install PKG…``                 ``true``; the report lists present/missing
venv           ``python3 -m venv DIR``                                 ``true`` (the image's Python is used)
pytest-plugin  ``--ctrf F``, ``--json-report…``, ``--cov…`` arguments    dropped (those plugins are not installed)
============== ======================================================= ==========================================

Everything else runs unchanged. Each rule that fires is recorded, once per distinct note, in the task's
import report (``TerminalTask.notes``), so a task that fails for a missing tool says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sandboxes.image import python_distributions, rootfs_packages

_APT = re.compile(r"^(sudo\s+)?(apt-get|apt|aptitude)\s+(-\S+\s+)*"
                  r"(update|upgrade|dist-upgrade|clean|autoclean|autoremove)\b"
                  r"|^(sudo\s+)?(add-apt-repository|update-alternatives|dpkg-reconfigure|locale-gen)\b"
                  r"|^rm\s+-[rf]+\s+/var/lib/apt/lists")
_APT_INSTALL = re.compile(r"^(sudo\s+)?(DEBIAN_FRONTEND=\S+\s+)?(apt-get|apt)\s+(-\S+\s+)*install\b(?P<args>.*)$")
_INSTALLER = re.compile(r"^(curl|wget)\b.*\|\s*(sudo\s+)?(env\s+\S+=\S+\s+)*(ba)?sh\b")
_UV_ENV = re.compile(r"^(source|\.)\s+\S*(\.local/bin/env|\.cargo/env)\S*\s*$")
_UV_PROJECT = re.compile(r"^uv\s+(init|venv|add|sync|lock|pip\s+install|python\s+install|tool\s+install)\b")
_UV_RUN = re.compile(r"^uv\s+run\s+((--\S+\s+(?!-)\S+|--\S+|-\S)\s+)*(?P<cmd>.*)$")
_UVX = re.compile(r"^uvx\s+((--with|--from|-w|--python|-p)\s+\S+\s+|--\S+\s+)*pytest\b(?P<args>.*)$")
_PIP = re.compile(r"^(sudo\s+)?(pip3?(\.\d+)?|python3?(\.\d+)?\s+-m\s+pip)\s+install\b(?P<args>.*)$")
_VENV = re.compile(r"^python3?(\.\d+)?\s+-m\s+venv\b")
_PYTEST = re.compile(r"^(pytest|py\.test|python3?(\.\d+)?\s+-m\s+pytest)\b")
_PLUGIN_ARGS = re.compile(r"\s(--ctrf(=|\s+)\S+|--json-report-file(=|\s+)\S+|--json-report\S*|--cov-report(=|\s+)\S+"
                          r"|--cov(=\S+)?|--timeout(=|\s+)\d+)")


def rewrite_script(text: str, notes: list[str]) -> str:
    """A shell script with every command rewritten by the rules above (heredoc bodies are left alone)."""
    out, heredoc = [], None
    for line in text.replace("\\\n", " ").splitlines():
        if heredoc is not None:
            out.append(line)
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        marker = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        heredoc = marker.group(1) if marker else None
        out.append(line if marker or line.lstrip().startswith("#") else rewrite_line(line, notes))
    return "\n".join(out) + "\n"


def rewrite_line(line: str, notes: list[str]) -> str:
    """One line of shell: each command between ``&&``, ``||`` and ``;`` rewritten on its own."""
    parts = []
    for index, piece in enumerate(split_commands(line)):
        command = piece.strip()
        if index % 2 or not command:  # odd items are the operators themselves
            parts.append(piece)
            continue
        lead, trail = piece[: len(piece) - len(piece.lstrip())], piece[len(piece.rstrip()):]
        parts.append(lead + rewrite_command(command, notes) + trail)
    return "".join(parts)


def rewrite_command(command: str, notes: list[str]) -> str:
    """One simple command (no ``&&``/``;``) rewritten by the first rule that matches, else unchanged."""
    for rule in _RULES:
        replaced = rule(command, notes)
        if replaced is not None:
            return replaced
    return command


def split_commands(line: str) -> list[str]:
    """Split on ``&&``, ``||`` and ``;`` outside quotes, ``$(…)`` and brackets; operators are kept as items."""
    pieces, current, quote, depth, i = [], "", "", 0, 0
    while i < len(line):
        c, two = line[i], line[i:i + 2]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "({[":
            depth += 1
        elif c in ")}]":
            depth = max(depth - 1, 0)
        elif depth == 0 and (two in ("&&", "||") or c == ";"):
            op = two if two in ("&&", "||") else ";"
            pieces += [current, op]
            current, i = "", i + len(op)
            continue
        current += c
        i += 1
    return pieces + [current]


def _note(notes: list[str], text: str) -> None:
    if text not in notes:
        notes.append(text)


def _apt(command: str, notes: list[str]) -> str | None:
    if _APT.match(command):
        _note(notes, f"skipped `{_short(command)}`: no package mirror in the sandbox")
        return "true"
    install = _APT_INSTALL.match(command)
    if install is None:
        return None
    wanted = [w.split("=")[0] for w in install.group("args").split() if not w.startswith("-") and not w.startswith(">")]
    present = rootfs_packages()
    missing = [p for p in wanted if p not in present]
    _note(notes, f"skipped apt-get install of {', '.join(wanted) or 'nothing'}: "
                 + (f"not in the image: {', '.join(missing)}" if missing else "all present in the image"))
    return "true"


def _installer(command: str, notes: list[str]) -> str | None:
    if _INSTALLER.match(command) or _UV_ENV.match(command):
        _note(notes, f"skipped `{_short(command)}`: it downloads a tool; the image's pytest is used instead")
        return "true"
    return None


def _uv(command: str, notes: list[str]) -> str | None:
    if _UV_PROJECT.match(command):
        _note(notes, f"skipped `{_short(command)}`: the image's Python and pytest stand in for uv's")
        return "true"
    uvx = _UVX.match(command)
    if uvx is not None:
        _note(notes, "`uvx … pytest` runs as `python3 -m pytest` (the image's pytest)")
        return _pytest("python3 -m pytest" + uvx.group("args"), notes)
    run = _UV_RUN.match(command)
    if run is not None:
        _note(notes, "`uv run CMD` runs CMD with the image's Python")
        inner = re.sub(r"^python(\s|$)", r"python3\1", run.group("cmd"))
        return rewrite_command(inner, notes)
    return None


def _pip(command: str, notes: list[str]) -> str | None:
    if _VENV.match(command):
        _note(notes, f"skipped `{_short(command)}`: the image's Python is used, without a venv")
        return "true"
    pip = _PIP.match(command)
    if pip is None:
        return None
    words = pip.group("args").split()
    wanted = [w for i, w in enumerate(words) if not w.startswith(("-", ">", "2>")) and words[i - 1:i] != ["-r"]]
    names = [re.split(r"[<>=!~\[;]", w)[0] for w in wanted]
    missing = [n for n in names if _normal(n) not in python_distributions()]
    requirements = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-r"]
    detail = f"not in the image: {', '.join(missing)}" if missing else "all present in the image"
    extra = f"; requirements file {', '.join(requirements)} not installed" if requirements else ""
    _note(notes, f"skipped pip install of {', '.join(names) or 'nothing'} (no package index offline): {detail}{extra}")
    return "true"


def _pytest(command: str, notes: list[str]) -> str | None:
    if not _PYTEST.match(command):
        return None
    dropped = _PLUGIN_ARGS.findall(command)
    if dropped:
        _note(notes, "dropped pytest plugin arguments (plugins not installed): "
                     + ", ".join(sorted({d[0].split("=")[0].split()[0] for d in dropped})))
    return _PLUGIN_ARGS.sub("", command)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _short(command: str) -> str:
    return command if len(command) <= 60 else command[:57] + "..."


_RULES: tuple[Callable[[str, list[str]], str | None], ...] = (_apt, _installer, _uv, _pip, _pytest)
