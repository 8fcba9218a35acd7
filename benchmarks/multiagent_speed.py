"""Steps per second of every multi-agent game, random vs random and scripted vs scripted, as a Markdown table.

For each multi-agent id (``agentgym_envs.multi_ids()``) and each pairing, plays games (seeds 0, 1, …) through
the PettingZoo AEC env until ``--seconds`` have passed (at least one game), and reports:

* ``env steps/s``: ``env.step`` calls alone (moves, not counting the dead steps that remove finished agents),
  i.e. what policies that answer instantly would see;
* ``with policies``: moves per second including the policies' own time (the scripted Hold'em policy's Monte
  Carlo hand strength, Connect Four's lookahead, ... dominate there);
* ``games/s`` and mean moves per game;
* ``self-play steps/s``: ``step`` of the single-agent ``<Game>-VsScripted-v0`` env with a random learner
  (includes the scripted opponent's replies and the text-env bookkeeping).

Usage: ``python benchmarks/multiagent_speed.py [--seconds 1.0] [--ids agentgym/TicTacToe-v0 ...]``
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import gymnasium
import numpy as np

import agentgym_envs
from agentgym_envs.policies import Opponent, resolve_opponent


@dataclass
class Speed:
    games: int = 0
    moves: int = 0
    step_s: float = 0.0
    policy_s: float = 0.0

    def cells(self) -> str:
        return (f"{self.moves / self.step_s:,.0f} | {self.moves / (self.step_s + self.policy_s):,.0f} | "
                f"{self.games / (self.step_s + self.policy_s):,.1f} | {self.moves / self.games:.1f}")


def measure_pairing(env_id: str, policy: str, seconds: float) -> Speed:
    """Games with both seats played by ``policy`` for about ``seconds``, timing steps and policies apart."""
    env = agentgym_envs.make_multi(env_id)
    opponent: Opponent = resolve_opponent(policy, env)
    speed, begin = Speed(), time.perf_counter()
    while speed.games == 0 or time.perf_counter() - begin < seconds:
        env.reset(seed=speed.games)
        rng = np.random.default_rng(speed.games)
        for agent in env.agent_iter():
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            t0 = time.perf_counter()
            action = opponent(observation, {**info, "rng": rng})
            t1 = time.perf_counter()
            env.step(action)
            speed.policy_s += t1 - t0
            speed.step_s += time.perf_counter() - t1
            speed.moves += 1
        speed.games += 1
    return speed


def measure_selfplay(env_id: str, seconds: float) -> float:
    """Steps per second of the VsScripted single-agent env under a random legal learner."""
    env = gymnasium.make(env_id.replace("-v0", "-VsScripted-v0"))
    rng, steps, elapsed, seed = np.random.default_rng(0), 0, 0.0, 0
    while steps == 0 or elapsed < seconds:
        _, info = env.reset(seed=seed)
        seed, done = seed + 1, False
        while not done:
            legal = info["valid_actions"]
            action = legal[int(rng.integers(len(legal)))]
            t0 = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            elapsed += time.perf_counter() - t0
            steps, done = steps + 1, terminated or truncated
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="wall time per measurement")
    parser.add_argument("--ids", nargs="*", default=agentgym_envs.multi_ids(), help="multi-agent ids")
    args = parser.parse_args()
    print("| game | pairing | env steps/s | with policies | games/s | moves/game | self-play steps/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for env_id in args.ids:
        selfplay = measure_selfplay(env_id, args.seconds)
        for policy in ("random", "scripted"):
            speed = measure_pairing(env_id, policy, args.seconds)
            tail = f"{selfplay:,.0f}" if policy == "scripted" else ""
            print(f"| {env_id} | {policy} vs {policy} | {speed.cells()} | {tail} |", flush=True)


if __name__ == "__main__":
    main()
