"""``python -m agentgym_envs.docgen [--out DIR] [--check] [--baselines] [ID ...]``: write or check the env pages."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import check, generate

DEFAULT_OUT = Path("docs/envs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentgym_envs.docgen", description=__doc__)
    parser.add_argument("ids", nargs="*", help="only these ids (default: every registered id, and the index)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the pages' folder (default: docs/envs)")
    parser.add_argument("--check", action="store_true", help="compare the pages there with the envs; exit 1 on a difference")
    parser.add_argument("--baselines", action="store_true", help="with --check, rerun and compare the baselines too")
    args = parser.parse_args(argv)
    ids = args.ids or None
    if args.check:
        problems = check(args.out, ids, baselines=args.baselines)
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(problems)} page(s) out of date" if problems else "env pages match the envs")
        return 1 if problems else 0
    for path in generate(args.out, ids):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
