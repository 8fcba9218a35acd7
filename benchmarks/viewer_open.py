"""Episode viewer: how long a large store's page takes to open in headless Chromium.

Builds a synthetic store (``--episodes`` episodes of ``--steps`` turns, written with plain SQL inserts in
the store's schema), writes its static viewer page, and opens it in headless Chromium. Reports the page
size, the time to write it, the time until the list is drawn (``window.viewerReady``: milliseconds since
navigation start), ``driver.get`` (until the load event: the whole page parsed) and the time to open one
episode and draw its turns.

    python benchmarks/viewer_open.py                      # 10,000 episodes x 6 turns
    python benchmarks/viewer_open.py --episodes 2000 --steps 20
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from leaderboards.store import open_store
from leaderboards.viewer import write_viewer

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
ENVS = ("agentgym/Maze-v0", "agentgym/Wordle-v0", "agentgym/Sudoku-v0", "agentgym/Household-v0", "agentgym/Search-v0")
WORDS = "north south east west open take look door key lamp table kitchen drawer garden".split()


def synthetic_store(path: Path, episodes: int, steps: int, *, runs: int = 4, seed: int = 0) -> Path:
    """A valid results store with ``episodes`` episodes over ``runs`` runs and 5 envs, ``steps`` turns each."""
    rng = random.Random(seed)
    with open_store(path) as store:
        db = store.db
        with db:
            for r in range(runs):
                suite = {"entries": [{"env_id": e, "family": "synthetic", "kwargs": {}, "tasks": 1, "repeats": 1}
                                     for e in ENVS], "name": "synthetic", "sampling": {}, "version": 1}
                db.execute("INSERT INTO runs (id, name, policy, suite, suite_version, suite_fingerprint, suite_json,"
                           " config_json, created_at) VALUES (?, ?, ?, 'synthetic', 1, 'f', ?, '{}', 'now')",
                           (r + 1, f"run{r}", ("random", "expert", "openai:x#m", "hf:tiny")[r % 4], json.dumps(suite)))
            db.executemany(_EPISODE_SQL, [_episode(i, runs, steps, rng) for i in range(episodes)])
            db.executemany(_STEP_SQL, [_step(i, t, rng) for i in range(episodes) for t in range(steps)])
    return path


_EPISODE_SQL = ("INSERT INTO episodes (id, run_id, suite_version, entry, env_id, family, episode_index, task, repeat,"
                " seed, task_index, won, score, return, steps, invalid_actions, terminated, truncated, prompt_tokens,"
                " completion_tokens, prompt_chars, completion_chars, policy_s, env_s, wall_s, attempts, finished_at)"
                " VALUES (?, ?, 1, ?, ?, 'synthetic', ?, ?, 0, ?, NULL, ?, ?, ?, ?, 0, ?, ?, NULL, NULL, 0, 0, 0, 0,"
                " 0.1, 1, 'now')")
_STEP_SQL = ("INSERT INTO steps (episode_id, t, reply, action, observation, reward, terminated, truncated,"
             " action_valid, parse_error, finish_reason, prompt_tokens, completion_tokens, prompt_chars, latency_s,"
             " env_s) VALUES (?, ?, ?, ?, ?, ?, 0, 0, 1, NULL, 'stop', NULL, NULL, 300, 0.01, 0.001)")


def _episode(i: int, runs: int, steps: int, rng: random.Random) -> tuple:
    env, won = ENVS[i % len(ENVS)], rng.random() < 0.4
    index = i // (runs * len(ENVS))
    return (i + 1, i % runs + 1, env, env, index, index, index, won, float(won), float(won), steps, won, not won)


def _step(i: int, t: int, rng: random.Random) -> tuple:
    words = " ".join(rng.choice(WORDS) for _ in range(20))
    action = f"go {rng.choice(WORDS)}"
    return (i + 1, t, f"Thought: {words}.\nAction: {action}", action, f"You see {words} {words}.", 0.0)


def measure(page: Path, profile: Path) -> dict[str, float]:
    """Open ``page`` in headless Chromium: list drawn (ms), load (s), one episode's turns drawn (s)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        start = time.perf_counter()
        driver.get(page.as_uri())
        loaded = time.perf_counter() - start
        ready_ms = driver.execute_script("return window.viewerReady")
        start = time.perf_counter()
        turns = driver.execute_script(
            "document.querySelector('#episodes tbody tr:last-child').click();"
            "return document.querySelectorAll('#episode .turn').length")
        opened = time.perf_counter() - start
        return {"list_drawn_ms": ready_ms, "load_s": loaded, "open_episode_s": opened, "turns": turns}
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        store = synthetic_store(Path(tmp) / "results.sqlite", args.episodes, args.steps)
        built = time.perf_counter() - start
        start = time.perf_counter()
        page, _ = write_viewer([store], Path(tmp) / "episodes.html")
        written = time.perf_counter() - start
        figures = measure(page, Path(tmp) / "profile")
        print(f"{args.episodes} episodes x {args.steps} turns: store built in {built:.2f} s; page "
              f"{page.stat().st_size / 1e6:.1f} MB written in {written:.2f} s; list drawn after "
              f"{figures['list_drawn_ms']:.0f} ms; loaded (whole page parsed) in {figures['load_s']:.2f} s; "
              f"an episode's {figures['turns']} turns drawn in {figures['open_episode_s']:.3f} s")


if __name__ == "__main__":
    main()
