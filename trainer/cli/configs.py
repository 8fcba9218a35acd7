"""``agentgym configs list`` and ``agentgym configs copy NAME [DEST]``: the training recipes the package ships.

    agentgym configs list
    agentgym configs copy household_gigpo .        # writes ./household_gigpo.yaml
    agentgym train household_gigpo.yaml steps=10
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="the recipes with their one-line summaries")
    copy = sub.add_parser("copy", help="copy a recipe to a file or folder, to edit and run with `agentgym train`")
    copy.add_argument("name", help="a recipe name from `agentgym configs list`")
    copy.add_argument("dest", nargs="?", default=".", help="a file, or a folder (default: the current folder)")
    copy.add_argument("--force", action="store_true", help="overwrite an existing file")


def run(args: argparse.Namespace) -> int:
    from agentgym_envs.cli.errors import UsageError

    from ..recipes import copy_recipe, recipe_summary, recipes

    names = recipes()
    if args.action == "list":
        width = max(map(len, names))
        for name in names:
            print(f"{name:<{width}}  {recipe_summary(name)}")
        return 0
    if args.name.removesuffix(".yaml") not in names:
        raise UsageError(f"no recipe named {args.name!r}; `agentgym configs list` shows {len(names)}: "
                         f"{', '.join(names)}")
    try:
        written = copy_recipe(args.name, args.dest, overwrite=args.force)
    except FileExistsError as e:
        raise UsageError(f"{e} exists; pass --force to overwrite it, or give another DEST") from None
    print(f"wrote {written}; run it with: agentgym train {written}")
    return 0
