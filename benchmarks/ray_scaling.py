"""Steps/s of a blocking env (terminal) and a fast env (household): process workers vs Ray actors at 1, 2, 4 workers.

    .venv/bin/python benchmarks/ray_scaling.py [--workers 1,2,4] [--steps 30] [--per-actor 4]
        [--kinds household,terminal] [--calls 200]

Every row steps a :class:`~agentgym_envs.vector.TextVectorEnv` with one fixed action per env and step
(auto-reset on), after a reset that is not timed, and reports env steps per second (``num_envs × steps /
seconds``) and the mean seconds per vector step:

* ``process``: ``W`` worker processes, one env each (the process mode's only layout);
* ``ray K=1``: ``W`` Ray actors, one env each (the same layout as ``process``: the difference is the RPC);
* ``ray K=k``: ``W`` actors hosting ``k`` envs each (``--per-actor``), one batched call per actor and step.

The blocking env is ``agentgym/Terminal-v0`` (bwrap) running ``sleep 0.05; pwd``: each step waits on its
sandbox's shell, as a browser waits on a page, so workers overlap the waits even on few cores. The fast
env is ``agentgym/Household-v0`` answering ``look`` (pure Python, tens of microseconds a step): its rows
measure what a worker round trip costs. The per-call overhead is the mean time of one vector step of a
single household env in each mode (the median of ``--calls`` steps) minus the bare env's median step.

Ray runs a loopback local cluster here (:func:`agentgym_envs.vector.ray_cluster.init_ray`, ``num_cpus`` =
the largest ``W``, one CPU reserved per actor). On the 2-core development machine with other jobs running,
treat the figures as ratios; docs/benchmarks.md has them and the expected multi-node behaviour.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.vector import TextVectorEnv

KINDS = {
    "household": ("agentgym/Household-v0", {}, "look"),
    "terminal": ("agentgym/Terminal-v0", {}, "sleep 0.05; pwd"),
}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    p.add_argument("--steps", type=int, default=30, help="timed vector steps per row")
    p.add_argument("--per-actor", type=int, default=4, help="k, envs per actor in the batched Ray rows")
    p.add_argument("--kinds", default="household,terminal")
    p.add_argument("--calls", type=int, default=200, help="vector steps for the per-call overhead")
    return p.parse_args(argv)


def make(kind: str, mode: str, num_envs: int, actors: int) -> TextVectorEnv:
    env_id, kwargs, _ = KINDS[kind]
    extra: dict[str, Any] = {"ray_options": {"num_actors": actors, "num_cpus": 1.0}} if mode == "ray" else {}
    return TextVectorEnv(env_id=env_id, env_kwargs=kwargs, num_envs=num_envs, mode=mode, **extra)


def timed_steps(venv: TextVectorEnv, action: str, steps: int) -> list[float]:
    """Seconds of each of ``steps`` vector steps, after an untimed reset."""
    venv.reset(seed=0)
    actions, times = [action] * venv.num_envs, []
    for _ in range(steps):
        start = time.perf_counter()
        venv.step(actions)
        times.append(time.perf_counter() - start)
    return times


def throughput(kind: str, mode: str, workers: int, per_actor: int, steps: int) -> tuple[int, float]:
    """``(num_envs, seconds)`` of one row."""
    num_envs = workers * per_actor
    with make(kind, mode, num_envs, workers) as venv:
        return num_envs, sum(timed_steps(venv, KINDS[kind][2], steps))


def bare_step_s(calls: int) -> float:
    import gymnasium

    env = gymnasium.make("agentgym/Household-v0")  # as the vector env's workers build it
    env.reset(seed=0)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step("look")
        times.append(time.perf_counter() - start)
        if terminated or truncated:
            env.reset()
    env.close()
    return statistics.median(times)


def overhead(calls: int) -> list[str]:
    """Per-call overhead rows: one household env, one vector step at a time, in each mode."""
    bare = bare_step_s(calls)
    rows = ["| mode | median ms per step of 1 env | overhead over the bare step (ms) |", "|---|---:|---:|",
            f"| bare env | {bare * 1e3:.3f} | 0 |"]
    for mode in ("thread", "process", "ray"):
        with make("household", mode, 1, 1) as venv:
            per = statistics.median(timed_steps(venv, "look", calls))
        rows.append(f"| {mode} | {per * 1e3:.3f} | {(per - bare) * 1e3:.3f} |")
    return rows


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    workers = [int(w) for w in args.workers.split(",") if w]
    from agentgym_envs.vector.ray_cluster import init_ray

    init_ray(num_cpus=max(workers))
    print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.steps} timed vector steps per row")
    rows = ["| env | workers | layout | envs | env steps/s | ms per vector step |", "|---|---:|---|---:|---:|---:|"]
    for kind in [k for k in args.kinds.split(",") if k]:
        for w in workers:
            for mode, per_actor, layout in (("process", 1, "process, 1 env each"), ("ray", 1, "ray K=1"),
                                            ("ray", args.per_actor, f"ray K={args.per_actor}")):
                n, seconds = throughput(kind, mode, w, per_actor, args.steps)
                rows.append(f"| {kind} | {w} | {layout} | {n} | {n * args.steps / seconds:,.0f} | "
                            f"{seconds / args.steps * 1e3:.1f} |")
                print(rows[-1], flush=True)
    print("\n".join(rows))
    print("\n".join(["", *overhead(args.calls)]))
    print(f"load at the end {os.getloadavg()[0]:.1f}")
    import ray

    ray.shutdown()


if __name__ == "__main__":
    main()
