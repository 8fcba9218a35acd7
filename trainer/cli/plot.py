"""``agentgym plot RUN_DIR [RUN_DIR …] [--out DIR]``: a run's training curves as PNGs and one HTML page.

Reads each run directory's ``metrics.jsonl`` (its update records and the quickstart's held-out ones) and
writes one PNG per panel plus ``index.html`` with the PNGs embedded (:mod:`trainer.run.dashboard`). Several run
directories are overlaid on the same axes. Keys a run did not log are listed as notes, never an error;
a truncated last line (a killed run) is skipped. Exit status 2 when a directory has no ``metrics.jsonl``
or the output folder cannot be written.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories (a config's out_dir); several are overlaid")
    parser.add_argument("--out", default=None,
                        help="folder for the PNGs and index.html (default: RUN_DIR/dashboard for one run, ./dashboard for several)")
    parser.add_argument("--label", action="append", default=None, metavar="NAME",
                        help="a legend name per RUN_DIR, in order (default: the directory names)")


def run(args: argparse.Namespace) -> int:
    from ..run.dashboard import DashboardError, read_run, unique_labels, write_dashboard

    paths = [Path(p) for p in args.run_dirs]
    labels = args.label or unique_labels(paths)
    if len(labels) != len(paths):
        print(f"agentgym plot: expected one --label per RUN_DIR ({len(paths)}), got {len(labels)}")
        return 2
    out = Path(args.out) if args.out else (paths[0] / "dashboard" if len(paths) == 1 else Path("dashboard"))
    try:
        runs = [read_run(path, label) for path, label in zip(paths, labels)]
        board = write_dashboard(runs, out)
    except DashboardError as e:
        print(f"agentgym plot: {e}")
        return 2
    except OSError as e:  # an unreadable log or an output folder we may not write
        print(f"agentgym plot: expected a readable run directory and a writable --out folder, got {e}")
        return 2
    for note in board.notes:
        print(f"note: {note}")
    for panel, path, drawn in board.figures:
        print(f"{panel.name}: {path} ({', '.join(drawn)})")
    print(f"dashboard: {board.html} ({len(board.figures)} figures, {len(runs)} run{'s' if len(runs) > 1 else ''})")
    return 0
