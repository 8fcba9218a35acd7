"""``agentgym check ID [ID …]``: run check_env and print a clear verdict (exit status 1 on failure)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="*", help="env ids (module:agentgym/Id also works)")
    parser.add_argument("--all", action="store_true", help="check every registered single-agent env")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=40, help="length of the reference rollout")


def run(args: argparse.Namespace) -> int:
    from agentgym_envs.checker import check_env
    from agentgym_envs.core.errors import UnknownEnvError
    from agentgym_envs.registration import env_ids

    ids = env_ids() if args.all else args.ids
    if not ids:
        print("agentgym check: give env ids or --all")
        return 2
    failed = []
    for env_id in ids:
        try:
            report = check_env(env_id, seed=args.seed, max_steps=args.max_steps)
        except UnknownEnvError as e:
            print(f"check_env {env_id}\nverdict: FAILED ({e})")
            failed.append(env_id)
            continue
        print(report, end="\n\n")
        if not report.passed:
            failed.append(env_id)
    print(f"{len(ids) - len(failed)} of {len(ids)} envs passed" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
