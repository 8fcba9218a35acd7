"""Batched play of local models (leaderboards/batched.py): the same records as one episode at a time, resumable,
failures kept per episode."""

from __future__ import annotations

import sqlite3

import pytest
from lb_helpers import FLAKY_ID, agentgym, episode_rows, write_suite

from leaderboards.batched import BatchedPool
from leaderboards.policies.models import bench_threads
from leaderboards.runner import BenchOptions, run_bench

QUIET = dict(progress=False)
#: 10 episodes of three envs of different lengths: with 4 rows, rows free at different turns and are refilled
#: mid-batch by the next entry's episodes (continuous batching), so the batches mix entries.
SUITE = [{"env": "agentgym/Maze-Easy-v0", "tasks": 2, "repeats": 2, "max_steps": 5},
         {"env": "agentgym/GuessNumber-v0", "tasks": 3, "max_steps": 4},
         {"env": "agentgym/TicTacToe-VsScripted-v0", "tasks": 3, "max_steps": 4, "protocol": "tags"}]


def _steps(store) -> list[tuple]:
    """Every turn of every episode as the store has it: what was replied, done and scored."""
    with sqlite3.connect(store) as db:
        return db.execute(
            "SELECT e.entry, e.episode_index, e.won, e.return, s.t, s.reply, s.action, s.reward, s.action_valid, "
            "s.parse_error, s.finish_reason, s.prompt_tokens, s.completion_tokens FROM episodes e "
            "JOIN steps s ON s.episode_id = e.id ORDER BY e.entry, e.episode_index, s.t").fetchall()


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_batched_records_equal_one_episode_at_a_time(tmp_path, temperature):
    suite = write_suite(tmp_path / "s.yaml", SUITE, sampling={"temperature": temperature, "max_new_tokens": 24})
    alone = run_bench(suite, "hf:tiny", tmp_path / "alone.sqlite", BenchOptions(batch=1, threads=1, **QUIET))
    batched = run_bench(suite, "hf:tiny", tmp_path / "batched.sqlite", BenchOptions(batch=4, threads=1, **QUIET))
    assert alone.played == batched.played == 10
    one, many = _steps(tmp_path / "alone.sqlite"), _steps(tmp_path / "batched.sqlite")
    assert len(one) > 10 and one == many
    with sqlite3.connect(tmp_path / "batched.sqlite") as db:
        config = db.execute("SELECT config_json FROM runs").fetchone()[0]
    assert '"batch": 4' in config and '"dtype": "float32"' in config and '"threads": 1' in config


def test_a_batched_run_resumes_with_only_the_missing_episodes(tmp_path):
    suite = write_suite(tmp_path / "s.yaml", SUITE, sampling={"temperature": 1.0, "max_new_tokens": 24})
    store = tmp_path / "r.sqlite"
    run_bench(suite, "hf:tiny", store, BenchOptions(batch=4, threads=1, **QUIET))
    reference = _steps(store)
    with sqlite3.connect(store) as db:  # as if the run had died before these four
        ids = [i for (i,) in db.execute("SELECT id FROM episodes ORDER BY id DESC LIMIT 4")]
        for table, column in (("steps", "episode_id"), ("starts", "episode_id"), ("episodes", "id")):
            db.execute(f"DELETE FROM {table} WHERE {column} IN ({','.join('?' * 4)})", ids)
    again = run_bench(suite, "hf:tiny", store, BenchOptions(batch=3, threads=1, **QUIET))
    assert (again.already_stored, again.played) == (6, 4)
    assert _steps(store) == reference
    assert run_bench(suite, "hf:tiny", store, BenchOptions(batch=4, threads=1, **QUIET)).played == 0


def test_an_env_failure_in_a_batch_fails_only_its_episode(tmp_path, flaky_attempts):
    entries = [{"env": FLAKY_ID, "tasks": 2, "family": "testing", "max_steps": 2, "protocol": "plain",
                "kwargs": {"fail_times": 1, "tag": "batched"}}, SUITE[0]]
    # (sampled: the tiny policy's greedy reply is empty, which the protocol refuses before the env is reached)
    suite = write_suite(tmp_path / "s.yaml", entries, sampling={"temperature": 1.0, "max_new_tokens": 16})
    alone = run_bench(suite, "hf:tiny", tmp_path / "a.sqlite", BenchOptions(batch=1, threads=1, **QUIET))
    flaky_attempts.clear()
    batched = run_bench(suite, "hf:tiny", tmp_path / "b.sqlite", BenchOptions(batch=8, threads=1, **QUIET))
    assert (batched.played, batched.infra_failures, batched.gave_up) == (6, 2, [])
    assert alone.infra_failures == 2
    assert [r["attempts"] for r in episode_rows(tmp_path / "b.sqlite")] == [1, 1, 1, 1, 2, 2]
    assert _steps(tmp_path / "a.sqlite") == _steps(tmp_path / "b.sqlite")


def test_a_policy_bug_in_a_batch_reaches_the_runner(tmp_path):
    """A policy bug surfaces as the run's error (not a hang, not an infra retry)."""
    from leaderboards.policies import parse_spec
    from leaderboards.suite import load_suite
    from leaderboards.workers import Job

    policy = parse_spec("hf:tiny").build(threads=1)
    policy.generate = lambda *a, **k: (_ for _ in ()).throw(ValueError("broken sampler"))
    suite = load_suite(write_suite(tmp_path / "s.yaml", SUITE[:1]))
    with BatchedPool(policy, suite, batch=2) as pool:
        futures = [pool.submit(Job(0, i)) for i in range(3)]
        with pytest.raises(ValueError, match="broken sampler"):
            futures[0].result(timeout=60)


def test_bench_threads_default_follows_the_load(monkeypatch):
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 0.0, 0.0))
    assert bench_threads(None) == 1  # three of four cores busy elsewhere
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 0.0, 0.0))
    assert bench_threads(None) == 1  # overloaded: never 0 or fewer
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert bench_threads(None) == 3
    assert bench_threads(0) == 4 and bench_threads(2) == 2
    with pytest.raises(ValueError, match="threads must be >= 0"):
        bench_threads(-1)


def test_bench_cli_offers_batch_dtype_and_threads(tmp_path):
    suite = write_suite(tmp_path / "s.yaml", SUITE[:1], sampling={"temperature": 0.0, "max_new_tokens": 16})
    store = tmp_path / "c.sqlite"
    result = agentgym("bench", "--suite", str(suite), "--policy", "hf:tiny", "--store", str(store), "--dtype",
                      "bfloat16", "--threads", "1", "--batch", "4", "--quiet", timeout=300)
    assert result.returncode == 0, result.stderr
    assert "run 'hf:tiny@bfloat16'" in result.stdout and "4/4 episodes stored" in result.stdout
    bad = agentgym("bench", "--suite", str(suite), "--policy", "hf:tiny", "--store", str(store), "--batch", "0")
    assert bad.returncode == 2 and "batch must be >= 1" in bad.stderr
