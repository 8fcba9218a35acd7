"""Evaluating scripted tutors and schedulers: returns with 95% confidence intervals, wins, and final metrics.

Used by the tests (the baseline ordering), the speed benchmark and the README table. Episode ``i`` is run
with seed ``seed + i``, so two policies meet the same students.

>>> summary = evaluate("agentgym/Tutoring-v1", "silent", episodes=20)
>>> summary.episodes, summary.low <= summary.mean <= summary.high, summary.won  # ending at once never wins
(20, True, 0.0)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import gymnasium
import numpy as np

from ..registration import make
from ..seeding import episode_seed
from ..stats import mean_ci

Policy = Callable[[gymnasium.Env, np.random.Generator], str]


@dataclass(frozen=True)
class Summary:
    """Mean return of ``episodes`` episodes with a normal-approximation 95% interval."""

    env_id: str
    policy: str
    episodes: int
    mean: float
    ci95: float
    """Half-width: 1.96 standard errors (:func:`agentgym_envs.stats.mean_ci`); infinite for one episode."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Means of the final ``info["metrics"]``."""
    won: float = 0.0
    """Share of episodes whose final ``info["won"]`` is true (the success leaderboards report)."""
    episodes_per_s: float = 0.0
    """Wall-clock rate, env and policy together."""
    episodes_per_cpu_s: float = 0.0
    """The same per second of this process's CPU time (steadier on a shared machine)."""

    @property
    def low(self) -> float:
        return self.mean - self.ci95

    @property
    def high(self) -> float:
        return self.mean + self.ci95


def policies_for(env_id: str) -> Mapping[str, Policy]:
    """The scripted policies of an env family (tutors or schedulers)."""
    if "PracticeScheduling" in env_id:
        from .schedulers import SCHEDULERS

        return SCHEDULERS
    from .tutors import TUTORS

    return TUTORS


def run_episode(env: gymnasium.Env, act: Policy, seed: int,
                rng: np.random.Generator) -> tuple[float, bool, dict[str, float]]:
    """``(return, won, final metrics)`` of one episode."""
    env.reset(seed=seed)
    total, done, info = 0.0, False, {}
    while not done:
        _, reward, terminated, truncated, info = env.step(act(env, rng))
        total, done = total + reward, terminated or truncated
    return total, bool(info["won"]), dict(info["metrics"])


def evaluate(env_id: str, policy: str, *, episodes: int = 200, seed: int = 0, **env_kwargs) -> Summary:
    """Run ``policy`` (a name from :func:`policies_for`) for ``episodes`` episodes and summarise."""
    act = policies_for(env_id)[policy]
    env = make(env_id, **env_kwargs)
    rng = np.random.default_rng(seed)
    returns, wins, finals = [], [], []
    start, cpu_start = time.perf_counter(), time.process_time()
    for i in range(episodes):
        total, won, metrics = run_episode(env, act, episode_seed(seed, i), rng)
        returns.append(total)
        wins.append(won)
        finals.append(metrics)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    env.close()
    mean, half = mean_ci(returns)
    ci95 = half if episodes > 1 else math.inf
    keys = sorted(set().union(*finals))
    metrics = {k: float(np.mean([m.get(k, 0.0) for m in finals])) for k in keys}
    return Summary(env_id, policy, episodes, mean, ci95, metrics, float(np.mean(wins)),
                   episodes / max(elapsed, 1e-9), episodes / max(cpu, 1e-9))


def markdown_table(summaries: list[Summary], columns: tuple[str, ...] = ()) -> str:
    """A Markdown table of returns with their 95% intervals, plus the chosen metric means."""
    head = "| env | policy | episodes | return (95% CI) | " + " | ".join(columns) + (" |" if columns else "")
    rows = [head.replace("|  |", "|"), "|" + "---|" * (4 + len(columns))]
    for s in summaries:
        cells = "".join(f" {s.metrics.get(c, float('nan')):.2f} |" for c in columns)
        rows.append(f"| {s.env_id} | {s.policy} | {s.episodes} | {s.mean:+.3f} ± {s.ci95:.3f} |{cells}")
    return "\n".join(rows)
