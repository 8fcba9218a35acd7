"""``agentgym bench``: evaluate a policy on a suite into a results store; rerun the same command to resume."""

from __future__ import annotations

import argparse
import sys

from ..policies import FORMS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "policy SPEC forms, " + FORMS
    parser.add_argument("--suite", required=True, help="a suite name (smoke, core, a family) or a path to a suite .yaml")
    parser.add_argument("--policy", required=True, metavar="SPEC", help="what to evaluate (forms below)")
    parser.add_argument("--store", default=None, help="results store file (default: <user data dir>/agentgym/results.sqlite)")
    parser.add_argument("--workers", type=int, default=1, help="episodes played in parallel (default 1)")
    parser.add_argument("--pool", choices=("auto", "thread", "process"), default="auto",
                        help="worker kind (auto: processes for random/expert with several workers, else threads)")
    parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                        help="play on Ray actors: alone, a local Ray cluster; with ADDRESS (auto, HOST:PORT), that "
                             "cluster (docs/scaling.md). Needs `pip install agentgym[ray]`")
    parser.add_argument("--ray-cpus", type=float, default=1.0, help="with --ray: CPUs reserved per worker (default 1)")
    parser.add_argument("--run", default=None, help="run name in the store (default: the policy spec)")
    parser.add_argument("--max-attempts", type=int, default=3, help="tries per episode on infrastructure failures")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per HTTP request")
    parser.add_argument("--lease-s", type=float, default=60.0,
                        help="seconds an episode stays reserved for this runner without a heartbeat; other runners "
                             "sharing the store redo a crashed runner's episodes after this (same host: at once)")
    parser.add_argument("--batch", type=int, default=16, metavar="N",
                        help="local models (hf:, checkpoint:, vllm:): episodes played in lockstep, each turn's replies "
                             "from one generate (default 16; 1: one episode at a time, on --workers)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                        help="local models: weight dtype (default float32; a bfloat16 run is named SPEC@bfloat16 "
                             "unless --run names it)")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="local models: torch CPU threads (0: every core; default: the cores left idle by other "
                             "processes, from the load average, at least 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def run(args: argparse.Namespace) -> int:
    from ..errors import LeaderboardError
    from ..runner import BenchOptions, run_bench
    from ..store import default_store_path

    store = args.store or default_store_path()
    try:
        if args.ray is not None and args.pool != "auto":
            raise ValueError(f"--ray plays on Ray actors; it does not combine with --pool {args.pool}")
        pool = "ray" if args.ray is not None else args.pool
        address = None if args.ray in (None, "local") else args.ray
        options = BenchOptions(workers=args.workers, pool=pool, run_name=args.run, max_attempts=args.max_attempts,
                               api_key_env=args.api_key_env, timeout=args.timeout, progress=not args.quiet,
                               lease_s=args.lease_s, ray_address=address, ray_cpus=args.ray_cpus, batch=args.batch,
                               dtype=args.dtype, threads=args.threads)
    except ValueError as e:
        print(f"agentgym bench: error: {e}", file=sys.stderr)
        return 2
    try:
        summary = run_bench(args.suite, args.policy, store, options)
    except LeaderboardError as e:
        print(f"agentgym bench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\nagentgym bench: interrupted; finished episodes are in {store}; rerun the same command to resume.",
              file=sys.stderr)
        return 130
    others = summary.stored - summary.already_stored - summary.played  # stored meanwhile by other runners
    print(f"run {summary.run.name!r} on {summary.run.suite} v{summary.run.suite_version}: {summary.stored}/"
          f"{summary.planned} episodes stored ({summary.played} played now in {summary.wall_s:.1f} s"
          f"{f', {others} by other runners' if others > 0 else ''}, {summary.infra_failures} infrastructure "
          f"failure(s)) in {store}")
    if summary.gave_up:
        print(f"{len(summary.gave_up)} episode(s) still unscored after repeated infrastructure failures (see the "
              "infra_errors table); rerun the same command to retry them.", file=sys.stderr)
        return 1
    return 0
