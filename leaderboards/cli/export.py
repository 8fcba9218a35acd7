"""``agentgym export``: episodes as chat-format JSONL, Parquet and Hugging Face datasets (rerun to resume)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..policies import FORMS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = ("examples:\n  agentgym export --store results.sqlite --out data/\n"
                     "  agentgym export --env agentgym/Maze-Easy-v0 --policy expert --episodes 100 --out data/ "
                     "--format all\n  agentgym export --train-run runs/quickstart --out data/\n\npolicy SPEC forms, "
                     + FORMS)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--store", metavar="PATH", help="a results store: export its stored episodes")
    what.add_argument("--env", metavar="ID", help="an env id: play --episodes episodes with --policy and export them")
    what.add_argument("--train-run", metavar="RUN_DIR", help="a training run trained with rollout.dump=true")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (trajectories.jsonl, ...)")
    parser.add_argument("--format", action="append", choices=("jsonl", "parquet", "hf", "all"), default=None,
                        help="jsonl (always written), parquet, hf (datasets save_to_disk), all; repeatable")
    parser.add_argument("--run", action="append", default=None, metavar="NAME", help="with --store: only this run "
                        "(repeatable; default all)")
    parser.add_argument("--policy", default="expert", metavar="SPEC", help="with --env: who plays (default expert)")
    parser.add_argument("--episodes", type=int, default=5, help="with --env: episodes, one per task (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="with --env: task t resets with seed + t (default 0)")
    parser.add_argument("--protocol", default="react", help="with --env: the reply protocol (default react; "
                        "tool_calls gives OpenAI tool calls)")
    parser.add_argument("--max-steps", type=int, default=None, help="with --env: turn limit (default: the env's)")
    parser.add_argument("--kwargs", default=None, metavar="JSON", help='with --env: make kwargs, e.g. \'{"split": "test"}\'')
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from ..errors import LeaderboardError
    from ..export import FORMATS, export

    formats = FORMATS if "all" in (args.format or []) else tuple(args.format or ("jsonl",))
    try:
        source = _source(args)
    except (LeaderboardError, ValueError) as e:
        print(f"agentgym export: error: {e}", file=sys.stderr)
        return 2
    try:
        with _Bar(not args.quiet) as bar:
            written = export(source, args.out, formats, progress=bar.update)
    except LeaderboardError as e:
        print(f"agentgym export: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\nagentgym export: interrupted; rerun the same command to resume into {args.out}", file=sys.stderr)
        return 130
    finally:
        source.close()
    _report_refused(getattr(source, "refused", []))
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


def _report_refused(refused: list[tuple[str, str]]) -> None:
    """Say which stored episodes were left out and why (grouped by reason; a few ids each)."""
    reasons: dict[str, list[str]] = {}
    for record_id, reason in refused:
        reasons.setdefault(reason, []).append(record_id)
    for reason, ids in sorted(reasons.items()):
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        print(f"agentgym export: left out {len(ids)} episode(s) whose start was not replayed ({shown}): {reason}",
              file=sys.stderr)


def _source(args: argparse.Namespace) -> Any:
    from .. import export_sources as sources

    if args.store:
        return sources.StoreSource(args.store, args.run)
    if args.train_run:
        return sources.TrainRunSource(args.train_run)
    if args.episodes < 1:
        raise ValueError(f"--episodes must be >= 1, got {args.episodes}")
    try:
        kwargs = json.loads(args.kwargs) if args.kwargs else {}
    except ValueError as e:
        raise ValueError(f"--kwargs expects a JSON object, got {args.kwargs!r} ({e})") from None
    if not isinstance(kwargs, dict):
        raise ValueError(f"--kwargs expects a JSON object, got {args.kwargs!r}")
    return sources.EnvSource(args.env, args.policy, episodes=args.episodes, seed=args.seed, protocol=args.protocol,
                             max_steps=args.max_steps, kwargs=kwargs)


class _Bar:
    """A rich progress bar on stderr (transient), fed ``update(done, total)``; nothing when disabled."""

    def __init__(self, enabled: bool):
        self.enabled, self._task = enabled, None

    def __enter__(self) -> _Bar:
        if self.enabled:
            from rich.console import Console
            from rich.progress import Progress

            self._bar = Progress(console=Console(stderr=True), transient=True)
            self._bar.start()
        return self

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._task is None:
            self._task = self._bar.add_task("exporting episodes", total=total)
        self._bar.update(self._task, completed=done)

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self._bar.stop()
