"""``agentgym list``: every registered env id with its family and description."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--family", help="only this family")


def run(args: argparse.Namespace) -> int:
    from agentgym_envs.registration import catalogue

    entries = [e for e in catalogue() if args.family is None or e.family == args.family]
    if not entries:
        print(f"no envs registered for family {args.family!r}")
        return 1
    width = max(len(e.id) for e in entries)
    for entry in entries:
        kind = " [multi-agent]" if entry.multi_agent else ""
        print(f"{entry.id:<{width}}  {entry.family:<10} {entry.description}{kind}")
    return 0
