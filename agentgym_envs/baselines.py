"""``agentgym baselines``: the env-side policies (random, scripted expert) on an env, summarised as a table.

:func:`evaluate` plays :class:`~agentgym_envs.policies.RandomPolicy` or
:class:`~agentgym_envs.policies.ExpertPolicy` (the same policies the leaderboards and the trainer use) on the
native env, with no model: every env's floor and ceiling. Model policies are evaluated by ``leaderboards``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .policies import EnvSidePolicy, ExpertPolicy, RandomPolicy, SamplingConfig
from .registration import make
from .seeding import derive_rng, episode_seed
from .stats import normal_half_width

#: Second key of the random policy's stream: it must differ from the env's (seeded with the same integer)
#: or the policy mirrors the env's draws.
_RANDOM_STREAM = 0x5EED
#: Unused by env-side policies given their own stream; the contract asks for one.
_SAMPLING = SamplingConfig()


def baseline_policy(agent: str, seed: int) -> EnvSidePolicy:
    """``"random"`` (one stream for the whole evaluation, from ``seed``) or ``"expert"``."""
    if agent == "random":
        return RandomPolicy(rng=derive_rng(seed, _RANDOM_STREAM))
    if agent == "expert":
        return ExpertPolicy()
    raise ValueError(f"agent must be 'random' or 'expert', got {agent!r}")


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
    policy = baseline_policy(agent, seed)
    env = make(env_id, **env_kwargs)
    policy.bind([env])
    wins, returns, steps = [], [], 0
    start = time.perf_counter()
    for episode in range(episodes):
        env.reset(seed=episode_seed(seed, episode))
        total, won, done = 0.0, False, False
        while not done:
            _, reward, terminated, truncated, info = env.step(policy.act([[]], sampling=_SAMPLING)[0].text)
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
