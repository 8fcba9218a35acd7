"""Runners sharing one store, and runners killed with SIGKILL: no worker outlives its runner, every episode is
recorded exactly once, a dead runner's episodes are redone, and progress counts are the store's."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from lb_helpers import REPO, SLEEPY_ID, count, episode_rows, write_suite

from leaderboards.leases import LeaseBook, Owner
from leaderboards.runner import BenchOptions, run_bench
from leaderboards.store import open_store
from leaderboards.suite import load_suite

RUNNER = Path(__file__).with_name("lb_runner_proc.py")
#: 24 episodes of 4 sleeping steps (~0.1 s each, almost no CPU): one runner alone takes ~2.5 s.
SUITE = [{"env": SLEEPY_ID, "tasks": 12, "repeats": 2, "family": "testing", "kwargs": {"delay": 0.025}}]
TOTAL = 24
PROGRESS = re.compile(rf"^  (\d+)/{TOTAL} episodes stored, (\d+) by this runner", re.M)


def _start(suite: Path, store: Path, *args: str) -> subprocess.Popen:
    """A runner (the expert policy) in its own session, so a test can clean up its whole tree, with Ctrl-C's
    default action, as a terminal's foreground job has it: a test run from a background job (CI's can be one)
    inherits SIGINT ignored, and its runner then played on through the Ctrl-C test's signal."""
    return subprocess.Popen([sys.executable, str(RUNNER), str(suite), str(store), *args], cwd=REPO,
                            start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_ctrl_c)


def _default_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stored(store: Path, busy_timeout: float = 0.1) -> int:
    try:
        with sqlite3.connect(store, timeout=busy_timeout) as db:
            return db.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
    except sqlite3.Error:  # not created yet, or busy
        return 0


def _runners(store: Path) -> int:
    try:
        with sqlite3.connect(store, timeout=0.1) as db:
            return db.execute("SELECT COUNT(*) FROM runners").fetchone()[0]
    except sqlite3.Error:  # not created yet, or busy
        return 0


def _wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the runner"
        time.sleep(0.02)


def _finish(process: subprocess.Popen, timeout: float = 60.0) -> dict:
    """The runner's summary, with ``progress``: ``(done, by this runner)`` from each of its progress lines."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0 and "Traceback" not in err, err
    summary = json.loads(out.strip().splitlines()[-1])
    summary["progress"] = [(int(d), int(own)) for d, own in PROGRESS.findall(err)]
    return summary


def _communicate_or_dump(process: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """``communicate``, or, when the runner has not ended in time, fail with every thread's stack (the runner
    registers ``faulthandler`` on SIGUSR1) so that a hang says where it is."""
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGUSR1)
        time.sleep(2)
        process.kill()
        _, err = process.communicate()
        pytest.fail(f"the runner did not end within {timeout:.0f} s; its stacks:\n{err[-20000:]}")


def _cleanup(*processes: subprocess.Popen) -> None:
    for process in processes:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()


def _assert_complete(store: Path) -> None:
    rows = episode_rows(store)
    keys = [(r["entry"], r["episode_index"]) for r in rows]
    assert len(keys) == len(set(keys)) == TOTAL
    assert all(r["won"] and r["steps"] == 4 for r in rows)
    assert count(store, "steps") == 4 * TOTAL
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0  # nothing left reserved


def _gated_suite(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """SUITE, whose episodes start only once the returned gate file exists; with the store's path."""
    gate = tmp_path / "go"
    entries = [{**SUITE[0], "kwargs": {**SUITE[0]["kwargs"], "gate": str(gate)}}]
    return write_suite(tmp_path / "s.yaml", entries, name=name), tmp_path / "r.sqlite", gate


def test_worker_processes_die_with_a_runner_killed_by_sigkill(tmp_path):
    suite = write_suite(tmp_path / "s.yaml", SUITE, name="orphans")
    runner = _start(suite, tmp_path / "r.sqlite", "--workers", "3", "--pool", "process")
    try:
        _wait_for(lambda: _stored(tmp_path / "r.sqlite") >= 3)
        children = psutil.Process(runner.pid).children(recursive=True)
        assert len(children) >= 3
        os.kill(runner.pid, signal.SIGKILL)  # the runner alone: its workers get no signal from us
        runner.wait()
        gone, alive = psutil.wait_procs(children, timeout=5)
        assert alive == [], f"{len(alive)} worker(s) outlived their runner by 5 s: {alive}"
    finally:
        _cleanup(runner)


def test_two_runners_on_one_store_share_the_work_and_record_each_episode_once(tmp_path):
    suite, store, gate = _gated_suite(tmp_path, "shared")
    first = _start(suite, store, "--progress-s", "0.3")
    second = _start(suite, store, "--workers", "2", "--pool", "thread", "--progress-s", "0.3")
    try:
        _wait_for(lambda: _runners(store) == 2)  # both registered (and holding leases) before anyone plays
        gate.touch()
        a, b = _finish(first), _finish(second)
    finally:
        _cleanup(first, second)
    _assert_complete(store)
    assert a["played"] >= 2 and b["played"] >= 4, (a, b)  # both really ran at the same time (their first claims)
    assert a["played"] + b["played"] == TOTAL
    assert a["stored"] == b["stored"] == a["planned"] == TOTAL
    assert a["progress"] and b["progress"]
    for lines in (a["progress"], b["progress"]):
        done = [d for d, _ in lines]
        assert done == sorted(done) and all(0 <= own <= d <= TOTAL for d, own in lines)
    # counts are the store's, over both runners: someone saw the other's episodes in its done count
    assert any(d > own for d, own in a["progress"] + b["progress"])


def test_a_runner_killed_mid_run_has_its_episodes_finished_by_the_other(tmp_path):
    suite, store, gate = _gated_suite(tmp_path, "takeover")
    victim = _start(suite, store, "--workers", "2", "--pool", "process")
    survivor = _start(suite, store)
    try:
        _wait_for(lambda: _runners(store) == 2)  # both hold leases: the survivor really plays alongside
        gate.touch()
        _wait_for(lambda: _stored(store) >= 6)
        os.killpg(victim.pid, signal.SIGKILL)  # mid-run, holding leases on the episodes it was playing
        victim.wait()
        at_kill = _stored(store)
        assert at_kill < TOTAL
        started = time.monotonic()
        result = _finish(survivor)
    finally:
        _cleanup(victim, survivor)
    _assert_complete(store)
    assert result["stored"] == TOTAL and result["played"] >= TOTAL - at_kill
    # same host: the dead runner is recognised at once, not after its 60 s lease
    assert time.monotonic() - started < 30


def test_the_next_runner_after_a_kill_finishes_the_run(tmp_path):
    suite, store = write_suite(tmp_path / "s.yaml", SUITE, name="next"), tmp_path / "r.sqlite"
    victim = _start(suite, store, "--workers", "2", "--pool", "process")
    try:
        _wait_for(lambda: _stored(store) >= 3)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
    finally:
        _cleanup(victim)
    at_kill = _stored(store)
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] > 0  # it died holding leases
    summary = run_bench(suite, "expert", store, BenchOptions(progress=False))
    assert (summary.already_stored, summary.played, summary.stored) == (at_kill, TOTAL - at_kill, TOTAL)
    _assert_complete(store)
    with open_store(store) as opened:  # who held what is meaningless in an exported copy
        exported = opened.export_without_steps(tmp_path / "export.sqlite")
    with sqlite3.connect(exported) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "episodes" in tables and not tables & {"leases", "runners"}


def _book(tmp_path: Path, owner: Owner | None = None, lease_s: float = 60.0) -> tuple[LeaseBook, list]:
    suite = load_suite(write_suite(tmp_path / "s.yaml", SUITE, name="unit"))
    with open_store(tmp_path / "r.sqlite") as store:
        run = store.run("expert", "expert", suite, {})
    plan = [(e.key, k) for e in suite.entries for k in range(e.episodes)]
    return LeaseBook(tmp_path / "r.sqlite", run, plan, lease_s=lease_s, owner=owner), plan


def test_a_live_runners_leases_are_not_claimed_by_another(tmp_path):
    a, plan = _book(tmp_path)
    b, _ = _book(tmp_path)
    with a, b:
        first = a.claim(5, set())
        second = b.claim(5, set())
        assert first.keys == plan[:5] and second.keys == plan[5:10]
        assert (first.elsewhere, second.elsewhere) == (0, 5)
        assert [o.pid for o in second.holders] == [os.getpid()]
        a.release(plan[0])
        assert b.claim(1, set()).keys == [plan[0]]  # handed back: claimable again
        assert b.claim(30, {plan[20]}).keys == plan[10:20] + plan[21:]  # skipped ones are left alone


def test_a_dead_runners_leases_are_reclaimed_at_once_and_a_foreign_ones_after_expiry(tmp_path):
    gone = psutil.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid of this host that no longer runs
    dead = Owner("dead", Owner.me().host, gone.pid, "1", "then")
    foreign = Owner("far", "a-host-far-away", 1, "1", "then")
    mine, plan = _book(tmp_path)
    with mine:  # leases left behind by a runner killed here, and by one on another host
        with sqlite3.connect(tmp_path / "r.sqlite") as db:
            now = time.time()
            db.executemany("INSERT INTO runners VALUES (?, 1, ?, ?, ?, ?, ?)",
                           [(o.id, o.host, o.pid, o.process_start, o.started_at, now) for o in (dead, foreign)])
            db.executemany("INSERT INTO leases VALUES (1, 1, ?, ?, ?, ?)",
                           [(e, i, "dead", now + 60) for e, i in plan[:3]]
                           + [(e, i, "far", now + 1.0) for e, i in plan[3:6]])
        claim = mine.claim(TOTAL, set())
        assert claim.keys == plan[:3] + plan[6:] and claim.elsewhere == 3
        assert "a-host-far-away" in claim.holders[0].describe()
        assert mine.claim(TOTAL, set()).keys == []  # what it holds is in flight; the far runner's is not expired
        time.sleep(1.1)
        assert mine.claim(TOTAL, set()).keys == plan[3:6]


def test_runners_opening_a_new_store_at_the_same_moment_do_not_collide(tmp_path):
    suite = load_suite(write_suite(tmp_path / "s.yaml", SUITE, name="race"))
    barrier, errors, ids = threading.Barrier(6), [], []

    def open_and_create_run() -> None:
        barrier.wait()
        try:
            with open_store(tmp_path / "r.sqlite") as store:
                ids.append(store.run("expert", "expert", suite, {}).id)
        except Exception as e:  # the assertion below names it
            errors.append(repr(e))

    threads = [threading.Thread(target=open_and_create_run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(ids) == 6 and len(set(ids)) == 1
    assert count(tmp_path / "r.sqlite", "runs") == 1


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_a_lease_must_last(bad):
    with pytest.raises(ValueError, match="lease_s and progress_s must be > 0"):
        BenchOptions(lease_s=bad)


TIED_CHILD = """
import sys, time
from leaderboards import lifeline
if sys.argv[1] == "watchdog":
    lifeline._ask_kernel_to_kill_me_with_parent = lambda: False
else:
    lifeline._watch = lambda parent_pid: None
lifeline.tie_to_parent(int(sys.argv[2]))
print("tied", flush=True)
time.sleep(60)
"""
PARENT = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2], str(os.getpid())],
                         stdout=subprocess.PIPE, text=True)
assert child.stdout.readline() == "tied\\n"
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("layer", ["kernel", "watchdog"])
def test_each_layer_alone_takes_a_worker_down_with_its_runner(layer):
    """The parent-death signal, and (where there is none) the watchdog thread, each suffice on their own."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, TIED_CHILD, layer], cwd=REPO, start_new_session=True,
                              stdout=subprocess.PIPE, text=True)
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        gone, alive = psutil.wait_procs([child], timeout=3)
        assert alive == [], f"the {layer} layer left the worker running"
    finally:
        _cleanup(parent)


def test_ctrl_c_stops_the_runner_and_its_workers_without_worker_tracebacks(tmp_path):
    # a longer, slower run than SUITE's (80 episodes of 1 s steps, ≥ 27 s on 3 workers): with SUITE's 24 quick
    # episodes, once with 0.25 s steps and once with 0.5 s steps under CI load, the run finished before the
    # signal landed; the count waits out the writers' locks (a 0.1 s busy timeout read 0 while 3 workers wrote)
    slow = [{**SUITE[0], "tasks": 40, "kwargs": {"delay": 1.0}}]
    suite, store = write_suite(tmp_path / "s.yaml", slow, name="ctrlc"), tmp_path / "r.sqlite"
    runner = _start(suite, store, "--workers", "3", "--pool", "process")
    try:
        _wait_for(lambda: _stored(store, busy_timeout=2.0) >= 3)
        children = psutil.Process(runner.pid).children(recursive=True)
        os.killpg(runner.pid, signal.SIGINT)  # what the terminal sends to the whole foreground group
        _, err = _communicate_or_dump(runner, timeout=60)  # 20 s timed out once on a loaded CI machine
        gone, alive = psutil.wait_procs(children, timeout=5)
    finally:
        _cleanup(runner)
    assert _stored(store) < 80, "the run finished before Ctrl-C: nothing was interrupted"
    assert alive == [] and "KeyboardInterrupt" in err
    assert "SpawnProcess" not in err and err.count("Traceback") == 1, err  # the runner's own, not one per worker
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0  # handed back on the way out
