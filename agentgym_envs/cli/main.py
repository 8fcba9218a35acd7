"""``agentgym``: one entry point; subcommands load lazily so ``agentgym list`` stays fast.

Later parts add theirs (``train``, ``bench``, ``leaderboard``) by adding a line to ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: name -> (module with add_arguments(parser) and run(args) -> int, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "list": ("agentgym_envs.cli.list_envs", "list registered env ids with one-line descriptions"),
    "play": ("agentgym_envs.cli.play", "play an env yourself in the terminal"),
    "check": ("agentgym_envs.cli.check", "run check_env on env ids and print a verdict"),
    "new": ("agentgym_envs.cli.new", "scaffold a new env module with a test"),
    "baselines": ("agentgym_envs.cli.baselines", "evaluate random and scripted-expert agents on registered envs"),
    "train": ("trainer.cli.train", "train a policy with RL from a YAML config and key=value overrides"),
    "quickstart": ("trainer.cli.quickstart", "build the tiny policy, warm it up, run RL on household tasks (CPU, minutes)"),
    "bench": ("leaderboards.cli.bench", "evaluate a policy on a benchmark suite into a results store (resumable)"),
    "leaderboard": ("leaderboards.cli.leaderboard", "render results stores as a Markdown table and an HTML page with plots"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgym", description="The open gym and trainer for LLM agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # "module:agentgym/Id" env ids (gymnasium's syntax) should find modules in the current directory.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    parser = build_parser()
    if not argv or argv[0] not in SUBCOMMANDS:
        args = parser.parse_args(argv)  # prints help or the error for an unknown command
        parser.print_help()
        return 2
    module = importlib.import_module(SUBCOMMANDS[argv[0]][0])
    sub_parser = argparse.ArgumentParser(prog=f"agentgym {argv[0]}", description=SUBCOMMANDS[argv[0]][1])
    module.add_arguments(sub_parser)
    args = sub_parser.parse_args(argv[1:])
    import agentgym_envs  # noqa: F401  (registers the built-in envs)

    return int(module.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
