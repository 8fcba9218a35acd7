"""What one generated env costs to accept: every gate, then the solver's 8 plays, in the sandbox (issue 19).

For each module (by default the good parametric family at three difficulty settings, from the scripted
designer of :mod:`meta_envs.design.designers`), ``--repeats`` times:

* **gates** — :func:`meta_envs.design.gates.validate_module`: parse, size, imports, instantiate, api, fuzz,
  determinism (two fresh processes), seed sensitivity, expert, baselines, leak, speed (novelty: no archive).
  The slowest gates are printed with their share.
* **8 plays** — one :class:`~meta_envs.design.sandboxed.SandboxedModuleEnv` started, 8 seeds played by a
  uniformly random legal-action solver (a fixed stream), closed: what EnvDesign-v0 pays per solver arm.
* **total** — gates + 8 plays. Goal: ≤ 5 s with bubblewrap.
* **EnvDesign-v0 step** — the same module as one designer action end to end (gates, novelty against the
  run's archive, the solver's plays, the reward, the archive write), in a fresh design env each repeat;
  a comment line makes each repeat's source new, so no cached gate report is reused.

    python benchmarks/meta_env_gates.py [--backend bwrap] [--repeats 3] [--difficulty 0.2 0.5 0.8]

Prints medians (and minima) in seconds; the figure in docs/benchmarks.md came from this command.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence


GOAL_S = 5.0
PLAYS = 8


def good_module(difficulty: float) -> str:
    """The good parametric family's source with its knob at ``difficulty`` (the scripted good designer)."""
    from meta_envs.design.designers import good_module

    return good_module(difficulty)


def time_gates(source: str, backend: str, difficulty: float) -> tuple[float, dict[str, float], bool]:
    """Seconds for all gates, seconds per gate, and whether the module passed."""
    from meta_envs.design.gates import validate_module

    began = time.perf_counter()
    report = validate_module(source, backend=backend, difficulty=difficulty)
    total = time.perf_counter() - began
    if report.infra_error:
        raise SystemExit(f"the sandbox failed (infra): {report.infra_error}; run scripts/setup_sandboxes.sh")
    return total, {g.name: g.seconds for g in report.gates}, report.passed


def time_plays(source: str, backend: str, difficulty: float, solver: str) -> tuple[float, float, float | None]:
    """Seconds for starting the env in a sandbox and the solver's 8 plays (and 8 more with the hint, as
    EnvDesign-v0 does when the module has one); the solver's success without and with the hint."""
    from meta_envs.design.sandboxed import SandboxedModuleEnv
    from meta_envs.design.solving import as_solver, measure_solver

    began = time.perf_counter()
    with SandboxedModuleEnv(source, difficulty=difficulty, backend=backend) as env:
        record = measure_solver(env, as_solver(solver), range(PLAYS))
    return time.perf_counter() - began, record.p_solver, record.p_hint


def time_env_step(source: str, backend: str, tag: str) -> float:
    """Seconds for one EnvDesign-v0 step of ``source`` (with a unique comment, so nothing is cached)."""
    import tempfile

    import gymnasium

    import agentgym_envs  # noqa: F401  (registers the ids)

    with tempfile.TemporaryDirectory() as archive:
        env = gymnasium.make("agentgym/EnvDesign-v0", archive=archive, backend=backend)
        try:
            env.reset(seed=0)
            began = time.perf_counter()
            env.step(f"{source}\n# benchmark {tag}\n")
            return time.perf_counter() - began
        finally:
            env.close()


def bench(difficulties: Sequence[float], backend: str, repeats: int, solver: str = "clue") -> list[dict]:
    rows = []
    for difficulty in difficulties:
        source = good_module(difficulty)
        gates, plays, steps, per_gate, passed, p_hat, p_hint = [], [], [], {}, True, 0.0, None
        for repeat in range(repeats):
            g, per_gate, ok = time_gates(source, backend, difficulty)
            p, p_hat, p_hint = time_plays(source, backend, difficulty, solver)
            gates.append(g), plays.append(p)
            steps.append(time_env_step(source, backend, f"{difficulty}-{repeat}"))
            passed = passed and ok
        totals = [g + p for g, p in zip(gates, plays)]
        rows.append({"difficulty": difficulty, "passed": passed, "p_hat": p_hat, "p_hint": p_hint,
                     "gates": statistics.median(gates), "plays": statistics.median(plays),
                     "total": statistics.median(totals), "total_min": min(totals), "env_step": statistics.median(steps),
                     "per_gate": per_gate})
    return rows


def print_rows(rows: list[dict], backend: str) -> None:
    print(f"| module (backend {backend}) | passed | solver p̂ (with hint) | gates s | 8 plays (+8 hinted) s "
          "| total s (min) | EnvDesign-v0 step s | slowest gates |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        slow = sorted(row["per_gate"].items(), key=lambda kv: -kv[1])[:3]
        slowest = ", ".join(f"{name} {s:.2f}" for name, s in slow)
        hint = "-" if row["p_hint"] is None else f"{row['p_hint']:.3f}"
        print(f"| good family, difficulty {row['difficulty']:.1f} | {row['passed']} | {row['p_hat']:.3f} ({hint}) "
              f"| {row['gates']:.2f} | "
              f"{row['plays']:.2f} | {row['total']:.2f} ({row['total_min']:.2f}) | {row['env_step']:.2f} | {slowest} |")
    worst = max(row["total"] for row in rows)
    print(f"worst median total {worst:.2f} s; goal <= {GOAL_S:.0f} s: {'met' if worst <= GOAL_S else 'NOT met'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="bwrap", choices=("bwrap", "docker"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--difficulty", type=float, nargs="+", default=[0.2, 0.5, 0.8])
    args = parser.parse_args(argv)
    print_rows(bench(args.difficulty, args.backend, args.repeats), args.backend)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
