"""Overhead of the TextWorld env over raw textworld stepping: same game, same command sequence, one run.

A command sequence is recorded once (uniformly random admissible commands from a fixed RNG, new episode when
one ends), then replayed, alternating rounds, through:

* raw textworld: ``textworld.start`` with the same ``EnvInfos`` our env requests (admissible and policy
  commands, facts, score...) and the same interpreter seed: this is the baseline of the overhead;
* raw textworld with minimal infos (won/lost/score only), for context: what the requested infos cost;
* ours, bare (``env.unwrapped``) and through ``gymnasium.make`` (the TimeLimit/checker wrappers included);
* and, least sensitive to noise, the wrapper's own CPU time per step measured inside our env (its step time
  minus the time spent in the textworld call it makes), relative to that textworld time.

Only ``step`` calls are timed (resets are not), in CPU time of this process (``time.process_time``: the
interpreter runs in-process), and the best round of each is reported, so that other processes' load skews
the comparison as little as possible. The game comes from the cache (generated on the first run).

    python benchmarks/textworld_overhead.py [--challenge cooking] [--difficulty medium] [--steps 400] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any, Callable

import gymnasium
import numpy as np
import textworld

import agentgym_envs  # noqa: F401  (registers the ids)
from agentgym_envs.games.textworld import tw_env

RESET = None  # marks an episode boundary in a recorded sequence
_IDS = {"cooking": "Cooking", "treasure_hunter": "TreasureHunter", "coin_collector": "CoinCollector",
        "simple": "Simple"}


def record_commands(env: Any, steps: int, seed: int = 0) -> list[str | None]:
    """``steps`` random admissible commands in game 0, with ``RESET`` where an episode ended."""
    rng = np.random.default_rng(seed)
    _, info = env.reset(options={"task_index": 0})
    sequence: list[str | None] = []
    while len(sequence) < steps:
        command = info["valid_actions"][int(rng.integers(len(info["valid_actions"])))]
        sequence.append(command)
        _, _, terminated, truncated, info = env.step(command)
        if terminated or truncated:
            sequence.append(RESET)
            _, info = env.reset(options={"task_index": 0})
    return sequence


def time_sequence(reset: Callable[[], Any], step: Callable[[str], Any], sequence: list[str | None]) -> float:
    """Steps per second of ``step`` over ``sequence`` (resets excluded from the clock)."""
    reset()
    spent, steps = 0.0, 0
    for command in sequence:
        if command is RESET:
            reset()
            continue
        start = time.process_time()
        step(command)
        spent += time.process_time() - start
        steps += 1
    return steps / spent


def own_time_per_step(env: Any, sequence: list[str | None]) -> tuple[float, float]:
    """(seconds per step in our code, in textworld) for the bare env, timing the backend call inside ``step``.

    Instrumentation only: it wraps the env's private ``_send`` (the single place where it calls textworld).
    """
    inner = [0.0]
    send = env._send

    def timed_send(command: str) -> Any:
        start = time.process_time()
        try:
            return send(command)
        finally:
            inner[0] += time.process_time() - start

    env._send = timed_send
    try:
        steps = sum(c is not RESET for c in sequence)
        total = steps / time_sequence(lambda: env.reset(options={"task_index": 0}), env.step, sequence)
    finally:
        del env._send
    return (total - inner[0]) / steps, inner[0] / steps


def raw_env(game_file: str, infos: textworld.EnvInfos) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = textworld.start(game_file, request_infos=infos)
    env.seed(tw_env.INTERPRETER_SEED)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--challenge", default="cooking", choices=sorted(_IDS))
    parser.add_argument("--difficulty", default="medium", choices=["easy", "medium", "hard"])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cache-dir")
    args = parser.parse_args()

    kwargs = {"difficulty": args.difficulty, "num_games": 1, "cache_dir": args.cache_dir,
              "max_episode_steps": 10_000}
    made = gymnasium.make(f"agentgym/TextWorld-{_IDS[args.challenge]}-v0", **kwargs)
    bare = gymnasium.make(f"agentgym/TextWorld-{_IDS[args.challenge]}-v0", **kwargs).unwrapped
    sequence = record_commands(bare, args.steps)
    game_file = str(bare.cache.get(bare.task.data["spec"]))
    raw = raw_env(game_file, tw_env.REQUEST_INFOS)
    minimal = raw_env(game_file, textworld.EnvInfos(won=True, lost=True, score=True))

    runners = {
        "raw textworld, same infos": (raw.reset, raw.step),
        "raw textworld, minimal infos": (minimal.reset, minimal.step),
        "ours, bare env": (lambda: bare.reset(options={"task_index": 0}), bare.step),
        "ours, gymnasium.make": (lambda: made.reset(options={"task_index": 0}), made.step),
    }
    best = {name: 0.0 for name in runners}
    for _ in range(args.rounds):  # alternate, so drifts in machine load hit every runner alike
        for name, (reset, step) in runners.items():
            best[name] = max(best[name], time_sequence(reset, step, sequence))

    steps = sum(c is not RESET for c in sequence)
    print(f"{args.challenge} ({args.difficulty}), game {game_file}")
    print(f"{steps} steps per round ({sequence.count(RESET)} episode ends), best of {args.rounds} rounds\n")
    print(f"| {'runner':30} | {'steps/s':>9} | {'overhead vs raw (same infos)':>28} |")
    print(f"|{'-' * 32}|{'-' * 11}|{'-' * 30}|")
    baseline = best["raw textworld, same infos"]
    for name, rate in best.items():
        print(f"| {name:30} | {rate:9,.0f} | {100 * (baseline / rate - 1):+27.1f}% |")
    ours, inside = min((own_time_per_step(bare, sequence) for _ in range(args.rounds)), key=lambda t: t[0] / t[1])
    print(f"\nwrapper's own time per step, measured inside the env: {1e6 * ours:.0f} us over "
          f"{1e3 * inside:.2f} ms of textworld = {100 * ours / inside:.1f}% overhead")


if __name__ == "__main__":
    main()
