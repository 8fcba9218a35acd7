"""Shared helpers for the leaderboard tests (imported by name; `conftest` re-exports the fixture): small suite files, a CLI runner, a flaky test env, store queries."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import gymnasium
import pytest
import yaml

from agentgym_envs.core import InfraError, InvalidAction, Step, TextEnv

REPO = Path(__file__).resolve().parents[2]


def write_suite(path: Path, entries: list[dict[str, Any]], *, name: str = "testsuite", version: int = 1,
                sampling: dict[str, Any] | None = None, **extra: Any) -> Path:
    """A suite YAML file at ``path`` (tests build their own small suites)."""
    data = {"name": name, "version": version, "entries": entries, **extra}
    if sampling is not None:
        data["sampling"] = sampling
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def agentgym(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the ``agentgym`` CLI in a subprocess (as a user would)."""
    return subprocess.run([sys.executable, "-m", "agentgym_envs.cli.main", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def episode_rows(store: Path, run: str | None = None) -> list[sqlite3.Row]:
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    query = ("SELECT e.*, r.name AS run FROM episodes e JOIN runs r ON r.id = e.run_id"
             + (" WHERE r.name = ?" if run else "") + " ORDER BY e.entry, e.episode_index")
    try:
        return list(db.execute(query, (run,) if run else ()))
    finally:
        db.close()


def count(store: Path, table: str) -> int:
    db = sqlite3.connect(store)
    try:
        return db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        db.close()


class FlakyEnv(TextEnv):
    """Say ``win`` to win. The first ``fail_times`` attempts of each episode hit an infrastructure failure.

    Episodes are told apart by a number drawn from the seeded RNG at reset (the env never sees the seed).
    ``mode`` is where it fails: ``info`` (the contract's infra_error) or ``raise`` (an exception from step).
    """

    attempts: ClassVar[dict[tuple[str, int], int]] = {}
    system_prompt = "Reply win or lose."

    def __init__(self, fail_times: int = 1, mode: str = "info", tag: str = "default", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        self.fail_times, self.mode, self.tag, self.episode = fail_times, mode, tag, 0

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.episode = int(self.np_random.integers(1 << 30))
        key = (self.tag, self.episode)
        FlakyEnv.attempts[key] = FlakyEnv.attempts.get(key, 0) + 1
        return "Say win.", {"instruction": "Win the game."}

    def _step(self, action: str) -> Step:
        if FlakyEnv.attempts[(self.tag, self.episode)] <= self.fail_times:
            if self.mode == "raise":
                raise RuntimeError("the flaky backend crashed")
            raise InfraError("the flaky backend is down")
        if action not in ("win", "lose"):
            raise InvalidAction("say win or lose")
        return Step("Done.", reward=float(action == "win"), terminated=True, won=action == "win")

    def valid_actions(self) -> list[str]:
        return ["win", "lose"]

    def expert_action(self) -> str:
        return "win"


FLAKY_ID = "agentgym/TestFlaky-v0"
FLAKY_V1_ID = "agentgym/TestFlaky-v1"
"""A second version of the same env, for the env-version policy's tests (registered in this process only)."""
for _id in (FLAKY_ID, FLAKY_V1_ID):
    if _id not in gymnasium.registry:
        gymnasium.register(_id, entry_point=FlakyEnv, max_episode_steps=5)


@pytest.fixture
def flaky_attempts() -> dict[tuple[str, int], int]:
    FlakyEnv.attempts.clear()
    return FlakyEnv.attempts


class SleepyEnv(TextEnv):
    """Say ``win`` to win, ``wait`` to wait; each step sleeps ``delay`` seconds (slow without using the CPU).

    With ``gate`` (a path), each reset waits until that file exists: a test can hold runners at the start line.

    For tests that need a run to last while something else happens (a second runner, a kill), on a loaded
    2-core machine: sleeping costs no CPU, so the timing barely depends on the load.
    """

    system_prompt = "Reply wait or win."

    def __init__(self, delay: float = 0.05, length: int = 4, gate: str = "", render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        self.delay, self.length, self.gate, self.t = delay, length, gate, 0

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        import time

        deadline = time.monotonic() + 60  # with a gate, no episode starts before the test creates that file
        while self.gate and not os.path.exists(self.gate) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.t = 0
        return "Wait, then win.", {"instruction": "Win after waiting."}

    def _step(self, action: str) -> Step:
        import time

        time.sleep(self.delay)
        self.t += 1
        if action not in ("wait", "win"):
            raise InvalidAction("say wait or win")
        done = action == "win" and self.t >= self.length
        return Step("Won." if done else "Waited.", reward=float(done), terminated=done, won=done)

    def valid_actions(self) -> list[str]:
        return ["wait", "win"]

    def expert_action(self) -> str:
        return "win" if self.t + 1 >= self.length else "wait"


SLEEPY_ID = "agentgym/TestSleepy-v0"
if SLEEPY_ID not in gymnasium.registry:
    gymnasium.register(SLEEPY_ID, entry_point=SleepyEnv, max_episode_steps=10)
