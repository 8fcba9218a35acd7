"""``agentgym leaderboard``: Markdown and HTML (with plots) from one or more results stores."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", action="append", default=None, metavar="PATH",
                        help="a results store; repeat to combine several (default: the user's store)")
    parser.add_argument("--out", default="leaderboard", metavar="DIR",
                        help="output directory for leaderboard.md, index.html and plots/ (default ./leaderboard)")
    parser.add_argument("--no-plots", action="store_true", help="tables only (no matplotlib needed)")
    parser.add_argument("--no-viewer", action="store_true",
                        help="skip episodes.html, the episode viewer the table's rows link to (it embeds every turn)")
    parser.add_argument("--export", metavar="PATH", default=None,
                        help="also write a copy of the (single) store without per-step rows: small enough to commit")


def run(args: argparse.Namespace) -> int:
    from ..errors import LeaderboardError
    from ..publish import write_report
    from ..store import default_store_path

    stores = args.store or [default_store_path()]
    try:
        if args.export:
            _export(stores, args.export)
        published = write_report(stores, args.out, plots=not args.no_plots, viewer=not args.no_viewer)
    except LeaderboardError as e:
        print(f"agentgym leaderboard: error: {e}", file=sys.stderr)
        return 2
    print(published.markdown.read_text())
    viewer = f", {published.viewer}" if published.viewer else ""
    print(f"wrote {published.markdown}, {published.html}{viewer} and {len(published.plots)} plot(s)", file=sys.stderr)
    return 0


def _export(stores: list, path: str) -> None:
    from ..errors import StoreError
    from ..store import open_store

    if len(stores) != 1:
        raise StoreError(f"--export copies one store; got {len(stores)} --store options")
    with open_store(stores[0], create=False) as store:
        print(f"exported {store.export_without_steps(path)} (runs and episodes, no steps)", file=sys.stderr)
