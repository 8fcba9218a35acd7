"""A leaderboard run on a two-node Ray cluster: one actor per node, and a node removed mid-run costs infra
failures only — the run completes with every episode stored exactly once, equal to a local run."""

from __future__ import annotations

import sqlite3
import threading
import time

import psutil
from lb_helpers import count, episode_rows, write_suite

from agentgym_envs.vector.ray_cluster import local_cluster
from leaderboards.runner import BenchOptions, run_bench

# Long enough (~100 episodes) that the removal lands mid-run on a loaded machine: at 24 episodes a CI run
# was over (1.8 s) before the test had seen both actors, and nothing was lost.
SUITE = [{"env": "agentgym/Maze-Hard-v0", "tasks": 24, "repeats": 2, "max_steps": 80},
         {"env": "agentgym/Sudoku-9x9-Easy-v0", "tasks": 24, "max_steps": 60},
         {"env": "agentgym/Hanoi-v0", "tasks": 24, "max_steps": 60}]
TOTAL = 96
FIELDS = ("entry", "episode_index", "seed", "won", "steps", "return", "invalid_actions")


def _rows(store) -> list[tuple]:
    return [tuple(r[f] for f in FIELDS) for r in episode_rows(store)]


def _stored(store) -> int:
    try:
        with sqlite3.connect(store, timeout=0.1) as db:
            return db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    except sqlite3.Error:
        return 0


def _actors_under(node) -> list[psutil.Process]:
    """The BenchActor processes a node's raylet started."""
    raylet = psutil.Process(node.all_processes["raylet"][0].process.pid)
    found = []
    for p in raylet.children(recursive=True):
        try:
            if p.cmdline()[:1] and p.cmdline()[0].startswith("ray::BenchActor"):
                found.append(p)
        except psutil.Error:
            pass
    return found


def test_a_removed_node_costs_infra_failures_and_the_run_completes(tmp_path):
    suite = write_suite(tmp_path / "suite.yaml", SUITE, name="raynodes")
    run_bench(suite, "random", tmp_path / "clean.sqlite", BenchOptions(workers=1, progress=False))
    store, result = tmp_path / "nodes.sqlite", {}
    with local_cluster(nodes=2, cpus_per_node=1) as cluster:
        head, (worker,) = cluster.head_node, cluster.worker_nodes
        options = BenchOptions(workers=2, pool="ray", ray_cpus=1.0, progress=False)  # 1 CPU each: one per node
        runner = threading.Thread(target=lambda: result.setdefault("s", run_bench(suite, "random", store, options)))
        runner.start()
        try:
            deadline = time.monotonic() + 120
            while _stored(store) < 2 and time.monotonic() < deadline:  # both actors are up and playing
                time.sleep(0.02)
            while not _actors_under(worker) and time.monotonic() < deadline:
                time.sleep(0.02)
            placed, stored_before = (len(_actors_under(head)), len(_actors_under(worker))), _stored(store)
            # A lost machine takes its processes with it at once. Removing only the raylet left the actor
            # answering over its direct connection until it noticed, and a fast run could finish first (CI:
            # 96 episodes in 1.4 s, nothing lost).
            for actor in _actors_under(worker):
                actor.kill()
            cluster.remove_node(worker, allow_graceful=False)
        finally:  # never leave the block (ray.shutdown) with the runner still calling into Ray: that deadlocks
            runner.join(timeout=240)
        assert not runner.is_alive()
    assert placed == (1, 1), "expected one actor per node"
    assert stored_before < TOTAL // 2, "the run was nearly over before the node could be removed"
    summary = result["s"]
    assert summary.stored == TOTAL and summary.infra_failures >= 1
    rows = episode_rows(store)
    keys = [(r["entry"], r["episode_index"]) for r in rows]
    assert len(keys) == len(set(keys)) == TOTAL
    assert count(store, "steps") == sum(r["steps"] for r in rows)
    assert _rows(store) == _rows(tmp_path / "clean.sqlite")
    with sqlite3.connect(store) as db:
        sources = {s for (s,) in db.execute("SELECT source FROM infra_errors")}
    assert sources == {"worker"}
