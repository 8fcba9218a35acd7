"""``agentgym check ID [ID …]``: run check_env and print a clear verdict (exit status 1 on failure).

Ids are looked up before anything runs: an unknown id, or one whose extra is not installed, is one line and exit
status 2 (:mod:`agentgym_envs.cli.errors`). ``--all`` skips, and names, the ids whose extra is missing.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="*", help="env ids (module:agentgym/Id also works)")
    parser.add_argument("--all", action="store_true", help="check every registered single-agent env")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=40, help="length of the reference rollout")


def run(args: argparse.Namespace) -> int:
    from agentgym_envs.checker import check_env
    from agentgym_envs.cli.errors import UsageError

    ids = _runnable_ids() if args.all else args.ids
    if not ids:
        raise UsageError("give env ids (see `agentgym list`) or --all")
    if not args.all:
        for env_id in ids:
            require_makeable(env_id)
    failed = []
    for env_id in ids:
        report = check_env(env_id, seed=args.seed, max_steps=args.max_steps)
        print(report, end="\n\n")
        if not report.passed:
            failed.append(env_id)
    print(f"{len(ids) - len(failed)} of {len(ids)} envs passed" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def require_makeable(env_id: str, *, multi_agent: bool = False) -> None:
    """Raise UnknownEnvError or MissingExtra (one line each on the command line) unless ``env_id`` can be made.

    ``module:agentgym/Id`` ids are left to gymnasium, which imports the module first."""
    import gymnasium

    from agentgym_envs.extras import MissingExtra
    from agentgym_envs.registration import UnknownEnvError, catalogue, unknown_id_message

    if ":" in env_id:
        return
    entries = {e.id: e for e in catalogue() if e.multi_agent == multi_agent}
    entry = entries.get(env_id)
    if entry is None and not multi_agent and env_id in gymnasium.registry:
        return  # registered with gymnasium.register directly: gymnasium knows it
    if entry is None:
        raise UnknownEnvError(unknown_id_message(env_id, list(entries)))
    if entry.missing():
        raise MissingExtra(env_id, entry.extra or "", entry.missing())


def _runnable_ids() -> list[str]:
    from agentgym_envs.registration import catalogue

    entries = [e for e in catalogue() if not e.multi_agent]
    skipped = [f"{e.id} (needs agentgym[{e.extra}])" for e in entries if e.missing()]
    if skipped:
        print(f"skipped, extra not installed: {', '.join(skipped)}\n")
    return [e.id for e in entries if not e.missing()]
