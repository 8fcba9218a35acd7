"""Env-side baseline agents (uniform random over valid actions, the scripted expert) and a small evaluator.

These act from the env itself rather than from text, so they need no model: they give every env a floor
(random) and a ceiling (expert) without a model. Model policies
live in ``trainer`` and are evaluated by ``leaderboards``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import gymnasium
import numpy as np

from .registration import make
from .seeding import derive_rng, episode_seed
from .stats import normal_half_width

Agent = Callable[[gymnasium.Env, np.random.Generator], str]
_RANDOM_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789 ")


def random_agent(env: gymnasium.Env, rng: np.random.Generator) -> str:
    """Uniform over the env's valid actions; else the env's ``random_action(rng)``; else a space sample."""
    base = env.unwrapped
    actions = base.valid_actions() if hasattr(base, "valid_actions") else None
    if actions:
        return actions[int(rng.integers(len(actions)))]
    if hasattr(base, "random_action"):
        return base.random_action(rng)
    # A short random string: a full space sample can be megabytes of noise, slow and uninformative.
    return "".join(rng.choice(_RANDOM_CHARS, size=int(rng.integers(1, 17))))


def expert_agent(env: gymnasium.Env, rng: np.random.Generator) -> str:
    return env.unwrapped.expert_action()


AGENTS: dict[str, Agent] = {"random": random_agent, "expert": expert_agent}


@dataclass
class EvalResult:
    env_id: str
    agent: str
    episodes: int
    success: float
    success_ci95: float
    mean_return: float
    mean_steps: float
    steps_per_s: float


def evaluate(env_id: str, agent: str, *, episodes: int = 20, seed: int = 0, **env_kwargs) -> EvalResult:
    """Run ``episodes`` episodes (seeds ``seed``, ``seed+1``, …) and summarise success, return and speed."""
    act = AGENTS[agent]
    env = make(env_id, **env_kwargs)
    # The agent's stream must differ from the env's (seeded with the same integer) or it mirrors the env's draws.
    rng = derive_rng(seed, 0x5EED)
    wins, returns, steps = [], [], 0
    start = time.perf_counter()
    for episode in range(episodes):
        env.reset(seed=episode_seed(seed, episode))
        total, won, done = 0.0, False, False
        while not done:
            _, reward, terminated, truncated, info = env.step(act(env, rng))
            total, won, done, steps = total + reward, info["won"], terminated or truncated, steps + 1
        wins.append(won)
        returns.append(total)
    elapsed = time.perf_counter() - start
    env.close()
    p = float(np.mean(wins))
    return EvalResult(env_id, agent, episodes, p, normal_half_width(p, episodes), float(np.mean(returns)),
                      steps / episodes, steps / max(elapsed, 1e-9))


def markdown_table(results: list[EvalResult]) -> str:
    rows = ["| env | agent | episodes | success (95% CI) | mean return | mean steps | steps/s |", "|---|---|---|---|---|---|---|"]
    for r in results:
        rows.append(f"| {r.env_id} | {r.agent} | {r.episodes} | {r.success:.2f} ± {r.success_ci95:.2f} | "
                    f"{r.mean_return:.2f} | {r.mean_steps:.1f} | {r.steps_per_s:,.0f} |")
    return "\n".join(rows)
