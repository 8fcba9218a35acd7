"""One leaderboard runner as its own process, for tests that start several, or kill one (``kill -9``).

``python lb_runner_proc.py SUITE STORE [--workers N] [--pool KIND] [--progress-s S]`` runs the ``expert``
policy and prints its summary as one JSON line. The test envs of ``lb_helpers`` are registered at import,
here and (the spawn start method re-imports this file as ``__mp_main__``) in worker processes.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lb_helpers  # noqa: E402,F401  (registers the test envs)

from leaderboards.runner import BenchOptions, run_bench  # noqa: E402


def main() -> None:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a test that times out asks for every stack
    parser = argparse.ArgumentParser()
    parser.add_argument("suite")
    parser.add_argument("store")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--pool", default="auto")
    parser.add_argument("--progress-s", type=float, default=None, help="progress lines on stderr this often")
    args = parser.parse_args()
    extra = {"progress": False} if args.progress_s is None else {"progress_s": args.progress_s}
    summary = run_bench(args.suite, "expert", args.store, BenchOptions(workers=args.workers, pool=args.pool, **extra))
    print(json.dumps({"planned": summary.planned, "already_stored": summary.already_stored, "played": summary.played,
                      "stored": summary.stored, "infra_failures": summary.infra_failures}), flush=True)


if __name__ == "__main__":
    main()
