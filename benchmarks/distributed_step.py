"""Step time and peak memory per rank: 1 vs 2 gloo ranks under ``torchrun`` (DDP and FSDP2), same global batch.

    .venv/bin/python benchmarks/distributed_step.py [--steps 4] [--tasks 4] [--group 4] [--turns 4]
        [--runs 1-ddp,2-ddp,2-fsdp] [--family qwen2] [--size tiny]

Each run is the trainer's own launch, ``torchrun --standalone --nproc_per_node N -m trainer.cli.train`` in
spirit (``python -m torch.distributed.run``, no activated venv needed): every rank runs
:func:`trainer.cli.train.main` with ``distributed.backend=gloo policy.device=cpu policy.threads=1`` on a
random-weight model built locally (``trainer.models.build_random_model``; nothing is downloaded), so the
global batch (``--tasks`` groups × ``--group``) is the same at every world size and each rank collects its
share of the groups. What is measured:

* **step time**: ``step_s`` of each update in rank 0's ``metrics.jsonl`` (collection + advantages + update;
  the ranks meet at the gradient reduction, so one rank's time is the step's); median over the updates after
  the first.
* **peak memory per rank**: each rank records ``ru_maxrss`` when its ``main`` returns, minus its resident set
  after the imports (so the Python, torch and transformers baseline is excluded); the absolute peak is
  printed too.

On this repo's 2-core CI machine two ranks share two cores with other jobs: the figure says what the
distributed code costs (collectives, per-rank env and model copies), not the speed-up on real GPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--tasks", type=int, default=4, help="groups per step (global; split across ranks)")
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--runs", default="1-ddp,2-ddp,2-fsdp", help="comma-separated WORLD-STRATEGY runs")
    p.add_argument("--family", default="qwen2")
    p.add_argument("--size", default="tiny")
    p.add_argument("--rank-worker", default="", help=argparse.SUPPRESS)
    p.add_argument("train_args", nargs="*", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rank_worker(out: str, train_args: list[str]) -> None:
    """One rank: the trainer's torchrun entry, then this rank's memory into ``out/rank<RANK>.json``."""
    import torch  # noqa: F401  (the baseline includes the libraries every rank loads)
    import transformers  # noqa: F401

    from trainer.cli.train import main
    from trainer import Trainer  # noqa: F401

    baseline = rss_bytes()
    code = main(train_args)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    Path(out, f"rank{os.environ.get('RANK', '0')}.json").write_text(
        json.dumps({"exit": code, "peak": peak, "baseline": baseline}))
    if code:
        raise SystemExit(code)


def launch(args: argparse.Namespace, model_dir: str, world: int, strategy: str) -> dict[str, Any]:
    out = tempfile.mkdtemp(prefix=f"dist-{world}-{strategy}-")
    overrides = ["policy.kind=hf", f"policy.path={model_dir}", "policy.device=cpu", "policy.threads=1",
                 f"distributed.strategy={strategy}", "distributed.backend=gloo", f"steps={args.steps}",
                 f"rollout.tasks_per_step={args.tasks}", f"rollout.group_size={args.group}",
                 f"env.max_turns={args.turns}", "rollout.max_new_tokens=16", "env.system_prompt=''",
                 "algorithm.filter_zero_variance=false", "loss.entropy_coef=0.01", "eval.num_tasks=1",
                 "checkpoint_every=0", "progress=false", f"out_dir={out}/run"]
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
            str(Path(__file__).resolve()), "--rank-worker", out, "--", "-", *overrides]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"{world} ranks / {strategy} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    records = [json.loads(line) for line in Path(out, "run", "metrics.jsonl").read_text().splitlines()]
    steps = [r["step_s"] for r in records if "step_s" in r]
    ranks = [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(world)]
    return {"step_s": steps, "peaks": [r["peak"] for r in ranks], "above": [r["peak"] - r["baseline"] for r in ranks]}


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.rank_worker:
        rank_worker(args.rank_worker, args.train_args)
        return
    sys.path.insert(0, str(ROOT))
    from trainer.models import build_random_model

    model_dir = str(build_random_model(args.family, Path(tempfile.mkdtemp()) / args.family, size=args.size))
    print(f"{args.family}/{args.size} random model; global batch {args.tasks} groups × G {args.group}, ≤ {args.turns} "
          f"turns; {args.steps} updates; 1 thread per rank; load {os.getloadavg()[0]:.1f}")
    rows = ["| ranks | strategy | step s (median after the first) | peak MiB per rank (above imports) | "
            "absolute peak MiB per rank |", "|---|---|---|---|---|"]
    for run in [r for r in args.runs.split(",") if r]:
        world, strategy = run.split("-", 1)
        result = launch(args, model_dir, int(world), strategy)
        steps = result["step_s"][1:] or result["step_s"]
        mib = lambda xs: " / ".join(f"{x / 2**20:,.0f}" for x in xs)  # noqa: E731
        print(f"  {run}: step_s {', '.join(f'{s:.2f}' for s in result['step_s'])}", flush=True)
        rows.append(f"| {world} | {strategy} | {statistics.median(steps):.2f} | {mib(result['above'])} | "
                    f"{mib(result['peaks'])} |")
    print("\n".join(rows))
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
