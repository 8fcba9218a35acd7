"""The results store: schema version, unique episodes, atomic writes, and safe refusal of bad files."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import replace

import pytest
from lb_helpers import agentgym, count, write_suite

from leaderboards.errors import StoreError
from leaderboards.records import EpisodeRecord, StepRecord
from leaderboards.runner import BenchOptions, run_bench
from leaderboards.store import SCHEMA_VERSION, open_store
from leaderboards.suite import load_suite

QUIET = BenchOptions(progress=False)


def _step(t: int, reply: str = "Action: go north") -> StepRecord:
    return StepRecord(t, reply, "go north", "You moved.", 0.0, False, False, True, None, "stop", None, None, 10, 0.1, 0.01)


def _episode(index: int, steps: list[StepRecord]) -> EpisodeRecord:
    return EpisodeRecord("agentgym/Maze-Easy-v0", "agentgym/Maze-Easy-v0", "examples", index, index, 0, index, None,
                         False, 0.0, 0.0, False, True, 1.0, steps=steps)


@pytest.fixture
def store_and_run(tmp_path):
    suite = load_suite(write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 3}]))
    store = open_store(tmp_path / "r.sqlite")
    yield store, store.run("random", "random", suite, {}), suite
    store.close()


def test_schema_version_is_recorded(store_and_run):
    store, _, _ = store_and_run
    assert [tuple(r) for r in store.db.execute("SELECT version FROM schema_version")] == [(SCHEMA_VERSION,)]


def test_an_episode_is_stored_once_with_its_steps(store_and_run):
    store, run, _ = store_and_run
    assert store.record_episode(run, _episode(0, [_step(0), _step(1)]))
    assert not store.record_episode(run, _episode(0, [_step(0)]))
    assert store.db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] == 1
    assert store.db.execute("SELECT COUNT(*) FROM steps").fetchone()[0] == 2


def test_a_failed_step_write_leaves_no_partial_episode(store_and_run):
    store, run, _ = store_and_run
    broken = replace(_step(1), observation=None)  # violates NOT NULL halfway through the steps
    with pytest.raises(sqlite3.IntegrityError):
        store.record_episode(run, _episode(1, [_step(0), broken]))
    assert store.finished(run) == set()
    assert store.db.execute("SELECT COUNT(*) FROM steps").fetchone()[0] == 0


def test_a_changed_suite_without_a_version_bump_is_refused(tmp_path):
    path, store = tmp_path / "s.yaml", tmp_path / "r.sqlite"
    run_bench(write_suite(path, [{"env": "agentgym/Maze-Easy-v0", "tasks": 2}]), "random", store, QUIET)
    write_suite(path, [{"env": "agentgym/Maze-Easy-v0", "tasks": 3}])
    with pytest.raises(StoreError, match="changed without a version bump"):
        run_bench(path, "random", store, QUIET)
    assert run_bench(write_suite(path, [{"env": "agentgym/Maze-Easy-v0", "tasks": 3}], version=2), "random",
                     store, QUIET).played == 3
    assert count(store, "episodes") == 5


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path):
    junk = tmp_path / "results.sqlite"
    junk.write_bytes(b"these are my notes, not a database\n" * 50)
    before = _digest(junk)
    with pytest.raises(StoreError, match="not an SQLite file"):
        open_store(junk)
    for command in (["bench", "--suite", "smoke", "--policy", "random", "--store", str(junk)],
                    ["leaderboard", "--store", str(junk), "--out", str(tmp_path / "out")]):
        result = agentgym(*command)
        assert result.returncode == 2 and "not an SQLite file" in result.stderr and "Traceback" not in result.stderr
    assert _digest(junk) == before


def test_a_corrupted_store_is_refused_and_left_as_it_was(tmp_path):
    store = tmp_path / "results.sqlite"
    run_bench(write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 4}]), "random", store, QUIET)
    data = bytearray(store.read_bytes())
    page = 4096
    data[2 * page: 2 * page + 64] = b"\xff" * 64  # clobber a b-tree page header
    store.write_bytes(bytes(data))
    before = _digest(store)
    with pytest.raises(StoreError, match="corrupted|not a readable results store"):
        open_store(store)
    result = agentgym("bench", "--suite", "smoke", "--policy", "random", "--store", str(store))
    assert result.returncode == 2 and "left as it is" in result.stderr
    assert _digest(store) == before


def test_foreign_and_newer_sqlite_files_are_refused(tmp_path):
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(StoreError, match="not an agentgym results store"):
        open_store(foreign)
    newer = tmp_path / "newer.sqlite"
    open_store(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreError, match="newer agentgym"):
        open_store(newer)


def test_reports_need_an_existing_store(tmp_path):
    result = agentgym("leaderboard", "--store", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "o"))
    assert result.returncode == 2 and "no results store" in result.stderr
    assert not (tmp_path / "none.sqlite").exists()
