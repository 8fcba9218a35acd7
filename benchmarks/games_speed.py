"""Steps per second of every puzzle game under its scripted expert, as a Markdown table.

For each single-player puzzle id (``agentgym_envs.games.register.PUZZLE_IDS``), plays one untimed warm-up
episode (it fills one-off caches such as Wordle's first guess, a 0.7 s minimax over 500 words), then expert
episodes (seeds 0, 1, …) through ``gymnasium.make`` until ``--seconds`` have passed (at least one episode),
and reports:

* ``env steps/s``: ``env.step`` calls alone (what a policy that answers instantly would see; Minesweeper's
  first reveal includes laying a no-guess board);
* ``expert steps/s``: ``expert_action()`` plus ``env.step`` (what generating expert data costs);
* ``reset ms``: mean ``reset`` time (puzzle generation: Sudoku uniqueness checks, Countdown targets);
* expert success over the episodes played, and mean steps per episode.

Usage: ``python benchmarks/games_speed.py [--seconds 1.0] [--ids agentgym/Wordle-v0 ...]`` (``--ids`` takes
any id whose env has ``expert_action``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import gymnasium

from agentgym_envs.games.register import PUZZLE_IDS


@dataclass
class Speed:
    env_id: str
    episodes: int
    steps: int
    wins: int
    step_s: float
    expert_s: float
    reset_s: float

    def row(self) -> str:
        return (f"| {self.env_id} | {self.steps / self.step_s:,.0f} | {self.steps / (self.step_s + self.expert_s):,.0f} | "
                f"{1e3 * self.reset_s / self.episodes:.2f} | {self.wins / self.episodes:.2f} ({self.episodes}) | "
                f"{self.steps / self.episodes:.1f} |")


def measure(env_id: str, seconds: float) -> Speed:
    """Expert episodes for about ``seconds`` of wall time, timing resets, expert calls and steps apart."""
    env = gymnasium.make(env_id)
    env.reset(seed=10**6)
    done = False
    while not done:  # warm-up episode, not timed
        _, _, terminated, truncated, _ = env.step(env.unwrapped.expert_action())
        done = terminated or truncated
    speed = Speed(env_id, 0, 0, 0, 0.0, 0.0, 0.0)
    begin = time.perf_counter()
    while speed.episodes == 0 or time.perf_counter() - begin < seconds:
        t0 = time.perf_counter()
        env.reset(seed=speed.episodes)
        speed.reset_s += time.perf_counter() - t0
        done = False
        while not done:
            t0 = time.perf_counter()
            action = env.unwrapped.expert_action()
            t1 = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            speed.expert_s += t1 - t0
            speed.step_s += time.perf_counter() - t1
            speed.steps += 1
            done = terminated or truncated
        speed.episodes += 1
        speed.wins += bool(info["won"])
    env.close()
    return speed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="wall time per env (at least one episode)")
    parser.add_argument("--ids", nargs="*", default=None, help="env ids (default: every puzzle id)")
    args = parser.parse_args()
    ids = args.ids or PUZZLE_IDS
    print("| env | env steps/s | expert steps/s | reset ms | expert success (episodes) | steps/episode |")
    print("|---|---|---|---|---|---|")
    for env_id in ids:
        print(measure(env_id, args.seconds).row(), flush=True)


if __name__ == "__main__":
    main()
