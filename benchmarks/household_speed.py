"""Speed of the household env against the real TextWorld engine that ALFWorld runs on.

Measures, in one run:

* ours: steps/s with uniformly random valid actions and with the scripted expert's actions, and
  reset time, through ``gymnasium.make`` (wrappers included, as users run it) and on the bare env;
* TextWorld: a game of comparable size made with ``tw-make custom`` (one room, 35 entities by default;
  a household room has ~20 receptacles and ~15 objects), stepped with random admissible commands
  (``EnvInfos(admissible_commands=True)``, the way ALFWorld runs it), and its reset time.

Only ``env.step``/``env.reset`` calls are timed, not the choice of action. TextWorld is an optional
benchmark dependency (the ``bench`` or ``games`` extra: ``pip install -e ".[bench]"``); without it the script
says so and measures ours only. Run it with the venv's Python, activated or not (``.venv/bin/python
benchmarks/household_speed.py``): ``tw-make`` is looked up beside that Python first.

    python benchmarks/household_speed.py [--seconds 3] [--tw-rooms 1] [--tw-objects 35]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import gymnasium
import numpy as np

import agentgym_envs  # noqa: F401  (registers the ids)

ENV_ID = "agentgym/Household-v0"


def time_steps(env: Any, choose: Callable[[Any, dict], str], seconds: float, num_tasks: int) -> float:
    """Steps per second of ``env.step`` with actions from ``choose(env, info)``, resetting on episode end."""
    _, info = env.reset(options={"task_index": 0})
    spent, steps, episode = 0.0, 0, 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        action = choose(env, info)
        start = time.perf_counter()
        _, _, terminated, truncated, info = env.step(action)
        spent += time.perf_counter() - start
        steps += 1
        if terminated or truncated:
            episode += 1
            _, info = env.reset(options={"task_index": episode % num_tasks})
    return steps / spent


def time_resets(env: Any, num_tasks: int, count: int = 3000) -> float:
    """Mean seconds per ``reset`` over ``count`` distinct tasks (after one warm-up pass)."""
    for i in range(min(count, num_tasks)):
        env.reset(options={"task_index": i})
    start = time.perf_counter()
    for i in range(count):
        env.reset(options={"task_index": i % num_tasks})
    return (time.perf_counter() - start) / count


def measure_ours(seconds: float) -> list[tuple[str, str, float, float | None]]:
    """Rows (env, policy, steps/s, reset seconds) for our env, wrapped and bare."""
    rng = np.random.default_rng(0)
    rows = []
    for label, env in (("household (gymnasium.make)", gymnasium.make(ENV_ID)),
                       ("household (bare env)", gymnasium.make(ENV_ID).unwrapped)):
        n = env.unwrapped.num_tasks
        random = time_steps(env, lambda e, info: info["valid_actions"][rng.integers(len(info["valid_actions"]))], seconds, n)
        expert = time_steps(env, lambda e, info: e.unwrapped.expert_action(), seconds, n)
        reset = time_resets(env, n)
        rows += [(label, "random", random, reset), (label, "expert", expert, None)]
    return rows


def tw_make() -> str | None:
    """The ``tw-make`` of the textworld installed for *this* Python: the script beside ``sys.executable``
    (a venv's ``bin/``, found without activating the venv), else one on ``PATH``, else ``None``."""
    beside = Path(sys.executable).parent / ("tw-make.exe" if os.name == "nt" else "tw-make")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("tw-make")


def make_textworld_game(directory: Path, rooms: int, objects: int) -> Path:
    """A game from ``tw-make custom`` (TextWorld's own generator, compiled to a Z-machine file)."""
    path = directory / "game.z8"
    command = [tw_make() or "tw-make", "custom", "--world-size", str(rooms), "--nb-objects", str(objects),
               "--quest-length", "5", "--seed", "1234", "--output", str(path), "-f", "--silent"]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=600)
    return path


def measure_textworld(seconds: float, rooms: int, objects: int) -> tuple[list[tuple[str, str, float, float]], str]:
    """Rows for TextWorld, or no rows and the reason it could not run."""
    try:
        import textworld
    except ImportError as e:
        return [], (f"textworld is not installed ({e}); `pip install -e '.[bench]'` (textworld 1.7.0 measured) "
                    "to compare.")
    if tw_make() is None:
        return [], (f"textworld is installed but its `tw-make` command is neither beside {sys.executable} nor on "
                    "PATH; reinstall textworld into this Python (`pip install textworld`).")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            game = make_textworld_game(Path(tmp), rooms, objects)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            return [], f"tw-make failed: {getattr(e, 'stderr', '') or e}"
        env = textworld.start(str(game), textworld.EnvInfos(admissible_commands=True))
        steps_per_s = _textworld_steps(env, seconds)
        start = time.perf_counter()
        for _ in range(20):
            env.reset()
        reset = (time.perf_counter() - start) / 20
        entities = len(textworld.Game.load(str(game.with_suffix(".json"))).infos)
        env.close()
    label = f"textworld {textworld.__version__} ({rooms} room(s), {entities} entities)"
    return [(label, "random", steps_per_s, reset)], ""


def _textworld_steps(env: Any, seconds: float) -> float:
    rng = np.random.default_rng(0)
    state = env.reset()
    spent, steps = 0.0, 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        action = state.admissible_commands[rng.integers(len(state.admissible_commands))]
        start = time.perf_counter()
        state, _, done = env.step(action)
        spent += time.perf_counter() - start
        steps += 1
        if done:
            state = env.reset()
    return steps / spent


def world_size(samples: int = 300) -> str:
    """Mean receptacles and objects per household room, for comparing against the TextWorld game."""
    env = gymnasium.make(ENV_ID).unwrapped
    receptacles, objects = [], []
    for i in range(samples):
        env.reset(options={"task_index": i})
        receptacles.append(len(env.world.receptacles))
        objects.append(len(env.world.objects))
    return f"household rooms: {np.mean(receptacles):.1f} receptacles and {np.mean(objects):.1f} objects on average"


def print_table(rows: list[tuple[str, str, float, float | None]]) -> None:
    print(f"| {'env':46} | {'actions':7} | {'steps/s':>9} | {'reset (ms)':>10} |")
    print(f"|{'-' * 48}|{'-' * 9}|{'-' * 11}|{'-' * 12}|")
    for env, policy, steps, reset in rows:
        shown = f"{reset * 1e3:10.3f}" if reset is not None else f"{'':10}"
        print(f"| {env:46} | {policy:7} | {steps:9,.0f} | {shown} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per steps/s measurement")
    parser.add_argument("--tw-rooms", type=int, default=1, help="tw-make --world-size")
    parser.add_argument("--tw-objects", type=int, default=35, help="tw-make --nb-objects")
    args = parser.parse_args()
    ours = measure_ours(args.seconds)
    theirs, problem = measure_textworld(args.seconds, args.tw_rooms, args.tw_objects)
    print(world_size())
    print_table(ours + theirs)
    if problem:
        print(f"\nTextWorld not measured: {problem}")
        return
    tw_steps, tw_reset = theirs[0][2], theirs[0][3]
    wrapped_random, wrapped_reset = ours[0][2], ours[0][3]
    print(f"\nratio, random actions through gymnasium.make: {wrapped_random / tw_steps:,.0f}x TextWorld's steps/s "
          f"(target >= 100x); reset {tw_reset / wrapped_reset:,.0f}x faster ({wrapped_reset * 1e3:.3f} ms, target < 1 ms)")


if __name__ == "__main__":
    main()
