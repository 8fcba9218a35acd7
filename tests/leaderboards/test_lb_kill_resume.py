"""A runner killed with SIGKILL mid-suite and restarted ends exactly like an uninterrupted run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from lb_helpers import REPO, agentgym, count, episode_rows, write_suite

from leaderboards.report import collect
from leaderboards.runner import BenchOptions, run_bench

#: Slow enough (~0.1-0.4 s per episode) that the kill lands mid-suite, fast enough for CI.
SUITE = [{"env": "agentgym/Maze-Hard-v0", "tasks": 6, "repeats": 2, "max_steps": 80},
         {"env": "agentgym/Sudoku-9x9-Easy-v0", "tasks": 6, "max_steps": 60},
         {"env": "agentgym/Hanoi-v0", "tasks": 6, "max_steps": 60}]
TOTAL = 24


def _stored(store) -> int:
    try:
        with sqlite3.connect(store, timeout=0.1) as db:
            return db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    except sqlite3.Error:  # not created yet, or locked by the writer
        return 0


def _kill_mid_suite(suite, store) -> int:
    """Start `agentgym bench` with two worker processes and SIGKILL its whole process group mid-suite."""
    command = [sys.executable, "-m", "agentgym_envs.cli.main", "bench", "--suite", str(suite), "--policy", "random",
               "--store", str(store), "--workers", "2", "--quiet"]
    process = subprocess.Popen(command, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    try:
        while _stored(store) < 4 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return _stored(store)


def test_killed_and_restarted_run_equals_an_uninterrupted_one(tmp_path):
    suite = write_suite(tmp_path / "suite.yaml", SUITE, name="killtest")
    killed_store, clean_store = tmp_path / "killed.sqlite", tmp_path / "clean.sqlite"
    at_kill = _kill_mid_suite(suite, killed_store)
    assert 4 <= at_kill < TOTAL, f"the kill should land mid-suite, but {at_kill}/{TOTAL} episodes were stored"

    result = agentgym("bench", "--suite", str(suite), "--policy", "random", "--store", str(killed_store),
                      "--workers", "2", "--quiet")
    assert result.returncode == 0, result.stderr
    assert f"{TOTAL}/{TOTAL} episodes stored ({TOTAL - at_kill} played now" in result.stdout

    run_bench(suite, "random", clean_store, BenchOptions(workers=1, progress=False))
    killed, clean = episode_rows(killed_store), episode_rows(clean_store)
    keys = [(r["entry"], r["episode_index"]) for r in killed]
    assert len(keys) == len(set(keys)) == TOTAL
    assert count(killed_store, "steps") == sum(r["steps"] for r in killed)  # no orphan or partial steps
    fields = ("entry", "episode_index", "seed", "won", "steps", "return", "invalid_actions")
    assert [tuple(r[f] for f in fields) for r in killed] == [tuple(r[f] for f in fields) for r in clean]
    a, b = collect([killed_store])[0].runs[0], collect([clean_store])[0].runs[0]
    assert (a.overall, a.mean(a.steps), a.episodes) == (b.overall, b.mean(b.steps), b.episodes)
