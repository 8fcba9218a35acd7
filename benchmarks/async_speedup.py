"""Synchronous vs asynchronous collection on a rollout-bound setting: wall time per update, throughput, success.

The setting: the tiny policy on 3×3 mazes (the quickstart's env, a short behaviour-cloning warm-up), every
env step sleeping ``--latency`` seconds (``env.step_latency_s``: a slow env, CPU idle, like a terminal or a
browser), so collection, not the update, is what a step waits for. Each seed trains the same number of
updates on batches of the same shape, synchronously and with ``asynchronous.enabled`` (S = ``--staleness``,
S + 1 collector threads), then evaluates greedily on held-out mazes.

    .venv/bin/python benchmarks/async_speedup.py [--seeds 0 1 2] [--steps 8] [--latency 0.5] [--staleness 1]

Prints, per mode: seconds per update (RL steps only: collection waits included, the warm-up and evaluation
not), trained tokens per second, env steps per second, mean staleness, dropped groups and final held-out
success (mean over seeds, each seed's value in brackets), then the speed-up. A measurement, not a test;
figures and the command are in docs/benchmarks.md ("Asynchronous collection").
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

SETTING = [
    "env.env_id=agentgym/Maze-Easy-v0", "env.train_kwargs={size: 3}", "env.eval_kwargs={size: 3}", "env.max_turns=8",
    "env.system_prompt=''", "bc.episodes=64", "bc.epochs=8", "bc.batch_size=8", "bc.lr=0.003",
    "rollout.tasks_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=6", "algorithm.estimator=gigpo_mean",
    "optim.lr=0.0002", "eval.num_tasks=48", "eval.temperature=0", "checkpoint_every=0", "progress=false",
    "policy.tiny.corpus_episodes=40",
]


def config(args: argparse.Namespace, root: Path, seed: int, out: str, extra: list[str]):
    from trainer.config import load_config

    return load_config(None, SETTING + extra + [f"seed={seed}", f"policy.cache_dir={root / 'tiny'}",
                                                 f"out_dir={root / out}"])


def warm_up(args: argparse.Namespace, root: Path, seed: int) -> float:
    """The seed's behaviour-cloning warm-up, once, without latency (not measured): a step-0 checkpoint both
    modes start from. Returns its held-out success (the RL runs' common start)."""
    from trainer import Trainer, fit

    trainer = Trainer(config(args, root, seed, f"bc-{seed}", ["steps=0"]))
    try:
        fit(trainer, echo=None)
        return trainer.evaluate()["eval_success"]
    finally:
        trainer.close()


def run(mode: list[str], seed: int, args: argparse.Namespace, root: Path, tag: str) -> dict[str, float]:
    """RL from the seed's warm-up checkpoint: per-update time, throughput and final held-out success. The
    latency is on the train env only: evaluation is not what is measured."""
    from trainer import Trainer, fit

    shutil.copytree(root / f"bc-{seed}", root / f"{tag}-{seed}")
    trainer = Trainer(config(args, root, seed, f"{tag}-{seed}", mode + [
        f"steps={args.steps}", f"env.step_latency_s={args.latency}", "resume=true"]))
    trainer.eval_spec = replace(trainer.eval_spec, step_latency_s=0.0)
    try:
        rl = [r for r in fit(trainer, echo=None) if "reward" in r]
        success = trainer.evaluate()["eval_success"]
    finally:
        trainer.close()
    seconds = sum(r["step_s"] for r in rl)
    return {"update_s": seconds / len(rl), "tokens_per_s": sum(r.get("train_tokens", 0.0) for r in rl) / seconds,
            "tokens": sum(r.get("train_tokens", 0.0) for r in rl),
            "env_steps_per_s": sum(r["turns"] * args.groups for r in rl) / seconds,
            "staleness": statistics.mean(r.get("async_staleness_mean", 0.0) for r in rl),
            "dropped": rl[-1].get("async_dropped_groups", 0.0), "success": success}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5, help="seconds each env step sleeps")
    parser.add_argument("--staleness", type=int, default=1, help="S of the async runs")
    args = parser.parse_args()
    args.groups = 8  # tasks_per_step × group_size: episodes per update
    torch.set_num_threads(1)
    logging.getLogger("trainer.run.loop").setLevel(logging.ERROR)  # "resuming under a changed config": on purpose
    modes = {"sync": [], f"async S={args.staleness}": ["asynchronous.enabled=true",
                                                        f"asynchronous.max_staleness={args.staleness}"]}
    start = time.perf_counter()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in modes}
    start_success: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            start_success.append(warm_up(args, Path(tmp), seed))
            for name, mode in modes.items():
                results[name].append(run(mode, seed, args, Path(tmp), name.split()[0]))
    print(f"rollout-bound setting: Maze-Easy 3x3, {args.latency} s per env step, {args.steps} updates of "
          f"{args.groups} episodes, seeds {args.seeds}; warm-up start success {statistics.mean(start_success):.3f} "
          f"{[round(s, 3) for s in start_success]}")
    for name, rows in results.items():
        mean = {k: statistics.mean(r[k] for r in rows) for k in rows[0]}
        print(f"{name:>10}: {mean['update_s']:.2f} s/update, {mean['tokens_per_s']:.0f} trained tokens/s "
              f"({mean['tokens']:.0f} tokens), {mean['env_steps_per_s']:.1f} env steps/s, staleness "
              f"{mean['staleness']:.2f}, dropped {mean['dropped']:.0f}, success {mean['success']:.3f} "
              f"{[round(r['success'], 3) for r in rows]}")
    sync, asyn = (results[name] for name in modes)
    speedup = statistics.mean(r["update_s"] for r in sync) / statistics.mean(r["update_s"] for r in asyn)
    print(f"speed-up (time per update, sync / async): {speedup:.2f}x; whole benchmark {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
