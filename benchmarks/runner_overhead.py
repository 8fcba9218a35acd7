"""Runner overhead: what ``agentgym bench`` adds per episode over a bare env loop, and its throughput.

The bare loop is ``reset`` + ``step(agent action)`` on the raw env with the same env-side agent. The runner
adds the protocol wrapper (render + parse), the chat history, per-step records and one SQLite transaction
per episode. Throughput is measured for 1 and 2 workers (threads, and processes for 2), pool start-up
included, on a fresh store each time.

    python benchmarks/runner_overhead.py                     # Maze-v0, random agent, 300 episodes
    python benchmarks/runner_overhead.py --env agentgym/Household-v0 --policy expert --episodes 200
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import gymnasium
import numpy as np
import yaml

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.policies import random_action
from leaderboards.runner import BenchOptions, run_bench


def bare_loop(env_id: str, policy: str, episodes: int, max_steps: int, seed: int) -> tuple[float, int]:
    """Seconds for ``episodes`` episodes of the plain env loop, and the steps taken."""
    env = gymnasium.make(env_id, max_episode_steps=max_steps)
    steps, start = 0, time.perf_counter()
    for i in range(episodes):
        env.reset(seed=seed + i)
        rng = np.random.default_rng(np.random.SeedSequence([seed, i]))
        done = False
        while not done:
            action = env.unwrapped.expert_action() if policy == "expert" else random_action(env, rng)
            _, _, terminated, truncated, _ = env.step(action)
            steps, done = steps + 1, terminated or truncated
    return time.perf_counter() - start, steps


def runner(suite: Path, policy: str, workers: int, pool: str) -> tuple[float, float, int]:
    """Wall seconds of a whole run, seconds spent inside episodes (from the store), and steps stored."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "bench.sqlite"
        start = time.perf_counter()
        run_bench(suite, policy, store, BenchOptions(workers=workers, pool=pool, progress=False))
        wall = time.perf_counter() - start
        with sqlite3.connect(store) as db:
            inside, steps = db.execute("SELECT SUM(wall_s), SUM(steps) FROM episodes").fetchone()
    return wall, inside, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="agentgym/Maze-v0")
    parser.add_argument("--policy", choices=("random", "expert"), default="random")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=10_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp) / "overhead.yaml"
        suite.write_text(yaml.safe_dump({"name": "overhead", "version": 1, "entries": [
            {"env": args.env, "tasks": args.episodes, "seed": args.seed, "max_steps": args.max_steps, "protocol": "react"}]}))
        bare_s, bare_steps = bare_loop(args.env, args.policy, args.episodes, args.max_steps, args.seed)
        one_wall, one_inside, one_steps = runner(suite, args.policy, 1, "thread")
        rows = [("bare env loop", bare_s, bare_steps), ("runner, 1 worker (inline)", one_wall, one_steps)]
        for workers, pool in ((2, "thread"), (2, "process")):
            wall, _, steps = runner(suite, args.policy, workers, pool)
            kind = "processes" if pool == "process" else "threads"
            rows.append((f"runner, {workers} workers ({kind})", wall, steps))

    n = args.episodes
    print(f"{args.env}, {args.policy} agent, {n} episodes, max {args.max_steps} steps, seeds from {args.seed}\n")
    print(f"| {'setup':<30} | episodes/s | ms/episode | steps/s |")
    print(f"|{'-' * 32}|-----------:|-----------:|--------:|")
    for name, seconds, steps in rows:
        print(f"| {name:<30} | {n / seconds:10.1f} | {1000 * seconds / n:10.2f} | {steps / seconds:7.0f} |")
    per_episode = (one_wall - bare_s) / n
    print(f"\nrunner overhead: {1000 * per_episode:.2f} ms per episode ({1e6 * per_episode / max(one_steps / n, 1):.0f} µs "
          f"per step); of which outside episodes (store writes, scheduling): {1000 * (one_wall - one_inside) / n:.2f} ms")


if __name__ == "__main__":
    main()
