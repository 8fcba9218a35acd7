"""``agentgym baselines``: random and scripted-expert agents on registered envs, as a Markdown table."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="*", help="env ids (default: every registered single-agent env)")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    import gymnasium

    from agentgym_envs.baselines import evaluate, markdown_table
    from agentgym_envs.core.hooks import has_expert
    from agentgym_envs.cli.check import require_makeable
    from agentgym_envs.registration import env_ids

    for env_id in args.ids:
        require_makeable(env_id)
    results = []
    for env_id in args.ids or [e for e in env_ids() if not _needs_extra(e)]:
        agents = ["random"] + (["expert"] if has_expert(gymnasium.make(env_id)) else [])
        for agent in agents:
            results.append(evaluate(env_id, agent, episodes=args.episodes, seed=args.seed))
            print(f"  {env_id:<36} {agent:<7} success {results[-1].success:.2f}", flush=True)
    print()
    print(markdown_table(results))
    return 0


def _needs_extra(env_id: str) -> bool:
    """Whether ``env_id``'s extra is missing (the default run skips those ids)."""
    from agentgym_envs.registration import catalogue

    return any(e.id == env_id and e.missing() for e in catalogue())
