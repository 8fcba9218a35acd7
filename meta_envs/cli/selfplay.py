"""``agentgym selfplay``: rounds of design → validate → solve → archive (:mod:`meta_envs.design.selfplay`).

    agentgym selfplay --designer scripted:hill-climber --group-size 1 --rounds 8 --archive runs/sp
    agentgym selfplay --designer hf:<dir> --group-size 4 --rounds 3 --archive runs/sp   # a model designer

prints one line per round and writes ``<archive>/selfplay_report.json`` (or ``--report``): every sample's
reward, outcome, failed gate, reward components and designer advantage; per round the archive's size, the
spread of difficulty and the solver's success. Roles: :mod:`meta_envs.cli.roles`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--designer", default="expert",
                        help="scripted:<name>, expert (the design env's scripted designer), hf:tiny, hf:<dir>, "
                             "vllm:<dir>, openai:<base_url>#<model>, checkpoint:<dir>")
    parser.add_argument("--solver", default=None,
                        help="clue, noisy-expert, random, expert, or a model SPEC (hf:, vllm:, openai:, checkpoint:); "
                             "default: the design env's own (EnvDesign-v0: clue; TaskDesign-v0: a noisy expert)")
    parser.add_argument("--env", default="agentgym/EnvDesign-v0", help="the design env id")
    parser.add_argument("--archive", required=True,
                        help="archive directory; an existing archive and its report are continued")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=4, help="designer samples per brief")
    parser.add_argument("-k", type=int, default=8, help="solver plays per generated env (>= 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="bwrap", choices=("bwrap", "docker"))
    parser.add_argument("--max-new-tokens", type=int, default=2048, help="a model designer's longest answer")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--env-kwargs", default="{}", help="extra make kwargs of the design env, as JSON")
    parser.add_argument("--report", default=None, help="JSON report path (default <archive>/selfplay_report.json)")


def run(args: argparse.Namespace) -> int:
    from agentgym_envs.policies import SamplingConfig
    from leaderboards.errors import LeaderboardError

    from ..design.selfplay import SelfPlayConfig, SelfPlayError, format_round, run_selfplay
    from .roles import designer_from_spec, solver_from_spec

    if any(spec.split(":")[0] in ("hf", "vllm", "checkpoint") for spec in (args.designer, args.solver or "")):
        from trainer.cli import quiet_transformers

        quiet_transformers()  # no progress bars; never reach the Hub
    try:
        env_kwargs = json.loads(args.env_kwargs)
        if not isinstance(env_kwargs, dict):
            raise SelfPlayError(f"--env-kwargs: expected a JSON object, got {args.env_kwargs!r}")
        config = SelfPlayConfig(archive=args.archive, rounds=args.rounds, group_size=args.group_size, k=args.k,
                                seed=args.seed, env_id=args.env, backend=args.backend, env_kwargs=env_kwargs)
        sampling = SamplingConfig(temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed)
        designer = designer_from_spec(args.designer, sampling)
        solver = None if args.solver is None else solver_from_spec(args.solver)
    except (SelfPlayError, LeaderboardError, ValueError) as e:
        print(f"agentgym selfplay: {e}")
        return 2
    report = Path(args.report) if args.report else Path(args.archive) / "selfplay_report.json"
    try:
        reports = run_selfplay(config, designer, solver, report_path=report,
                               on_round=lambda r: print(format_round(r)))
    except SelfPlayError as e:
        print(f"agentgym selfplay: {e}")
        return 2
    print(f"archive growth {[r.archive_size for r in reports]}; report: {report}")
    return 0
