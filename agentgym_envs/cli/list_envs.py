"""``agentgym list``: every registered env id with its family and description, and what it still needs.

An id whose optional extra is not installed is marked ``needs agentgym[EXTRA]`` (making it would fail with the
same advice); the base install (gymnasium, PettingZoo, numpy) runs every unmarked id.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", help="only this family")


def run(args: argparse.Namespace) -> int:
    from agentgym_envs.cli.errors import UsageError
    from agentgym_envs.registration import catalogue

    entries = [e for e in catalogue() if args.family is None or e.family == args.family]
    if not entries:
        families = sorted({e.family for e in catalogue()})
        raise UsageError(f"no envs registered for family {args.family!r}; families: {', '.join(families)}")
    width = max(len(e.id) for e in entries)
    for entry in entries:
        kind = " [multi-agent]" if entry.multi_agent else ""
        needs = f"  [needs agentgym[{entry.extra}]]" if entry.missing() else ""
        print(f"{entry.id:<{width}}  {entry.family:<10} {entry.description}{kind}{needs}")
    return 0
