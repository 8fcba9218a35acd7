"""Leaderboard runs on Ray actors (``agentgym bench --ray``): same episodes as local workers, lost actors are
infrastructure failures that the run survives, and a driver killed with SIGKILL resumes with each episode
stored exactly once. Real Ray, loopback only (``agentgym_envs.vector.ray_cluster``)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import psutil
import pytest
from lb_helpers import REPO, agentgym, count, episode_rows, write_suite
from ray_support import ray_local  # noqa: F401  (a module-scoped fixture)

from leaderboards.errors import RunAborted
from leaderboards.runner import BenchOptions, run_bench

#: ~0.1-0.4 s per random episode: a kill lands mid-suite, the suite stays short for CI.
SUITE = [{"env": "agentgym/Maze-Hard-v0", "tasks": 6, "repeats": 2, "max_steps": 80},
         {"env": "agentgym/Sudoku-9x9-Easy-v0", "tasks": 6, "max_steps": 60},
         {"env": "agentgym/Hanoi-v0", "tasks": 6, "max_steps": 60}]
TOTAL = 24
FIELDS = ("entry", "episode_index", "seed", "won", "steps", "return", "invalid_actions", "terminated", "truncated")
RAY = ("--ray", "--workers", "2", "--ray-cpus", "0.5")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The suite and an uninterrupted run of it by the in-thread worker (what every Ray run must equal)."""
    folder = tmp_path_factory.mktemp("ray-bench")
    suite = write_suite(folder / "suite.yaml", SUITE, name="raytest")
    run_bench(suite, "random", folder / "clean.sqlite", BenchOptions(workers=1, progress=False))
    return suite, _rows(folder / "clean.sqlite")


def _rows(store) -> list[tuple]:
    return [tuple(r[f] for f in FIELDS) for r in episode_rows(store)]


def _stored(store) -> int:
    try:
        with sqlite3.connect(store, timeout=0.1) as db:
            return db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    except sqlite3.Error:  # not created yet, or locked by the writer
        return 0


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _bench_actors(root: int) -> list[psutil.Process]:
    """The BenchActor processes among ``root``'s descendants (Ray titles them ``ray::BenchActor...``)."""
    found = []
    for p in psutil.Process(root).children(recursive=True):
        try:
            if p.cmdline()[:1] and p.cmdline()[0].startswith("ray::BenchActor"):
                found.append(p)
        except psutil.Error:
            pass
    return found


def _assert_once_and_equal(store, expected: list[tuple]) -> None:
    rows = episode_rows(store)
    keys = [(r["entry"], r["episode_index"]) for r in rows]
    assert len(keys) == len(set(keys)) == TOTAL
    assert count(store, "steps") == sum(r["steps"] for r in rows)  # no orphan or partial steps
    assert _rows(store) == expected


def test_driver_sigkill_then_resume_stores_each_episode_once(ray_local, reference, tmp_path):  # noqa: F811
    """Both drivers start their own local cluster although this module's is discoverable (``RAY_ADDRESS``):
    ``--ray`` alone never joins another cluster (it used to join it, or fail on ``num_cpus``)."""
    suite, expected = reference
    store = tmp_path / "killed.sqlite"
    elsewhere = {"RAY_ADDRESS": ray_local.get_runtime_context().gcs_address}
    command = [sys.executable, "-m", "agentgym_envs.cli.main", "bench", "--suite", str(suite), "--policy", "random",
               "--store", str(store), *RAY, "--quiet"]
    log = tmp_path / "driver.log"
    with open(log, "wb") as err:
        driver = subprocess.Popen(command, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=err,
                                  env={**os.environ, **elsewhere})
    try:
        deadline = time.monotonic() + 120
        while _stored(store) < 3 and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        actors = _bench_actors(driver.pid)
        assert driver.poll() is None, log.read_text()[-2000:]
        os.kill(driver.pid, signal.SIGKILL)  # the driver alone: Ray must end its actors by itself
        driver.wait()
        at_kill = _stored(store)
        assert len(actors) == 2, f"expected 2 BenchActor processes under the driver, got {actors}"
        gone_by = time.monotonic() + 20
        while _alive(actors) and time.monotonic() < gone_by:
            time.sleep(0.1)
        assert not _alive(actors), "the actors outlived their killed driver"
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)  # Ray's agent processes of that local cluster, if any are left
        except ProcessLookupError:
            pass
    assert 3 <= at_kill < TOTAL, f"the kill should land mid-suite, but {at_kill}/{TOTAL} episodes were stored"

    result = agentgym("bench", "--suite", str(suite), "--policy", "random", "--store", str(store), *RAY, "--quiet",
                      timeout=180, env=elsewhere)
    assert result.returncode == 0, result.stderr
    assert f"{TOTAL}/{TOTAL} episodes stored ({TOTAL - at_kill} played now" in result.stdout
    _assert_once_and_equal(store, expected)


def test_ray_run_stores_the_same_episodes_as_process_workers(ray_local, reference, tmp_path):  # noqa: F811
    suite, expected = reference
    processes, on_ray = tmp_path / "process.sqlite", tmp_path / "ray.sqlite"
    run_bench(suite, "random", processes, BenchOptions(workers=2, pool="process", progress=False))
    summary = run_bench(suite, "random", on_ray, BenchOptions(workers=2, pool="ray", ray_cpus=0.5, progress=False))
    assert (summary.played, summary.stored, summary.infra_failures) == (TOTAL, TOTAL, 0)
    assert _rows(processes) == expected
    _assert_once_and_equal(on_ray, expected)
    assert summary.run.config["pool"] == "ray"
    assert ray_local.is_initialized(), "a pool that joined a running Ray must leave it running"


def test_a_killed_actor_is_an_infra_failure_and_the_run_completes(ray_local, reference, tmp_path):  # noqa: F811
    suite, expected = reference
    store, result = tmp_path / "lost.sqlite", {}
    options = BenchOptions(workers=2, pool="ray", ray_cpus=0.5, progress=False)
    runner = threading.Thread(target=lambda: result.setdefault("summary", run_bench(suite, "random", store, options)))
    runner.start()
    deadline = time.monotonic() + 120
    while (_stored(store) < 3 or len(_bench_actors(os.getpid())) < 2) and time.monotonic() < deadline:
        time.sleep(0.02)
    victim = [p for p in _bench_actors(os.getpid()) if p.cmdline()[0].endswith(".play")] or _bench_actors(os.getpid())
    victim[0].kill()
    runner.join(timeout=180)
    assert not runner.is_alive()
    summary = result["summary"]
    assert summary.stored == TOTAL and summary.infra_failures >= 1
    _assert_once_and_equal(store, expected)
    with sqlite3.connect(store) as db:
        failures = db.execute("SELECT source, error FROM infra_errors").fetchall()
    assert failures and all(source == "worker" and "was lost" in error for source, error in failures), failures


def test_a_cluster_too_small_is_refused_before_anything_is_played(ray_local, reference, tmp_path):  # noqa: F811
    suite, _ = reference
    store = tmp_path / "small.sqlite"
    with pytest.raises(RunAborted, match=r"has 2 CPUs, expected at least 3 workers × 1 = 3"):
        run_bench(suite, "random", store, BenchOptions(workers=3, pool="ray", progress=False))
    assert _stored(store) == 0


def test_cli_refuses_ray_with_a_local_pool(tmp_path):
    result = agentgym("bench", "--suite", "smoke", "--policy", "random", "--store", str(tmp_path / "s.sqlite"),
                      "--ray", "--pool", "process")
    assert result.returncode == 2 and "does not combine with --pool process" in result.stderr
    assert not (tmp_path / "s.sqlite").exists()


def test_an_unreachable_cluster_address_is_refused_at_once(reference, tmp_path):
    """``--ray HOST:PORT`` with nothing listening: ray.init alone waited there for minutes."""
    suite, _ = reference
    start = time.monotonic()
    result = agentgym("bench", "--suite", str(suite), "--policy", "random", "--store", str(tmp_path / "s.sqlite"),
                      "--ray", "127.0.0.1:1", "--quiet", timeout=60)
    assert result.returncode == 2 and "cannot reach a Ray cluster at 127.0.0.1:1" in result.stderr, result.stderr
    assert time.monotonic() - start < 30
    assert _stored(tmp_path / "s.sqlite") == 0


def test_without_ray_installed_the_cli_says_how_to_install_it(reference, tmp_path):
    suite, _ = reference
    store = tmp_path / "s.sqlite"
    argv = ["agentgym", "bench", "--suite", str(suite), "--policy", "random", "--store", str(store), "--ray"]
    code = (f"import runpy, sys; sys.modules['ray'] = None; sys.argv = {argv!r}; "  # `import ray` now fails
            "runpy.run_module('agentgym_envs.cli.main', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "pip install 'agentgym[ray]'" in done.stderr and "Traceback" not in done.stderr
    assert _stored(store) == 0
