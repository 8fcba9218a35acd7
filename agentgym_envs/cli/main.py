"""``agentgym``: one entry point; subcommands load lazily so ``agentgym list`` stays fast.

Every part registers its own subcommands: a ``COMMANDS`` table (name -> (module, one-line help)) in its
``cli/__init__.py``, named under the ``agentgym.commands`` entry-point group in ``pyproject.toml``. This
module reads that group, so the env package never imports the trainer or the leaderboards by name (the
dependency points from them to it), and a new part adds commands without editing this file. Only the
chosen command's module is imported.

A user's mistake (:mod:`agentgym_envs.cli.errors`) ends the command with one line on stderr and exit status 2;
any other exception is a bug and keeps its traceback. ``agentgym --debug COMMAND …`` (or ``AGENTGYM_DEBUG=1``)
shows the traceback of user errors too and turns on debug logging.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..plugins import registered_entries
from . import COMMANDS as OWN_COMMANDS

GROUP = "agentgym.commands"


class CommandRegistryError(Exception):
    """Two parts register the same subcommand name, or a registered table has the wrong shape."""


def subcommands() -> dict[str, tuple[str, str]]:
    """Every registered subcommand: name -> (module with ``add_arguments`` and ``run``, one-line help).

    The env package's own come first, then each registered part's table in entry-point name order. An entry
    naming a package that is not installed (stale metadata) contributes nothing; any other import error
    is a bug and is raised."""
    found: dict[str, tuple[str, str]] = dict(OWN_COMMANDS)
    owner = {name: __package__ for name in found}
    for entry in sorted(registered_entries(GROUP), key=lambda e: e.name):
        if entry.value.partition(":")[0] == __package__:
            continue  # our own table, already in
        try:
            table = entry.load()
        except ModuleNotFoundError as e:
            if e.name != entry.value.split(".")[0]:
                raise
            continue
        _merge(found, owner, table, entry.value)
    return found


def _merge(found: dict[str, tuple[str, str]], owner: dict[str, str], table: object, source: str) -> None:
    if not isinstance(table, dict):
        raise CommandRegistryError(f"expected {source} to be a dict name -> (module, help), got {type(table).__name__}")
    for name, spec in table.items():
        if name in found:
            raise CommandRegistryError(f"expected unique subcommand names, got {name!r} from both {owner[name]} "
                                       f"and {source}: rename one of them")
        found[name], owner[name] = tuple(spec), source


def build_parser(commands: dict[str, tuple[str, str]]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgym", description="The open gym and trainer for LLM agents.")
    parser.add_argument("--debug", action="store_true", help="full tracebacks (also for user errors), debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in commands.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # "module:agentgym/Id" env ids (gymnasium's syntax) should find modules in the current directory.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    debug = os.environ.get("AGENTGYM_DEBUG", "") not in ("", "0")
    while argv and argv[0] == "--debug":
        debug, argv = True, argv[1:]
    commands = subcommands()
    parser = build_parser(commands)
    if not argv or argv[0] not in commands:
        parser.parse_args(argv)  # prints help or the error for an unknown command
        parser.print_help()
        return 2
    if debug:
        import logging

        logging.basicConfig(level=logging.DEBUG)
    return _run_command(argv, commands[argv[0]], debug)


def _run_command(argv: list[str], command: tuple[str, str], debug: bool) -> int:
    """Parse the subcommand's arguments and run it; a user's mistake is one line and status 2."""
    from .errors import user_error_line

    module_name, help_text = command
    try:
        module = importlib.import_module(module_name)
        sub_parser = argparse.ArgumentParser(prog=f"agentgym {argv[0]}", description=help_text)
        module.add_arguments(sub_parser)
        args = sub_parser.parse_args(argv[1:])
        import agentgym_envs  # noqa: F401  (registers the built-in envs)

        return int(module.run(args) or 0)
    except Exception as e:
        line = user_error_line(e, module_name)
        if line is None or debug:
            raise
        print(f"agentgym {argv[0]}: {line}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
