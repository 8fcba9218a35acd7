"""The warm pool and the Python runner (untrusted Python driven over JSON lines, never exec'd in the host)."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest
from sandbox_backends import require_backend

import sandboxes
from sandboxes import PythonRunner, RunnerError, SandboxPool

MODULE = """
import os

state = {"calls": 0}


def add(a, b):
    print("noise on stdout must not corrupt the protocol")
    state["calls"] += 1
    return a + b


def fail():
    raise KeyError("missing")


def spin():
    while True:
        pass


def die():
    os._exit(3)


def unjsonable():
    return object()


def escape(path):
    open(path, "w").write("pwned")
    return os.path.exists(path)
"""


@pytest.fixture
def runner(box):
    return PythonRunner(box, MODULE)


def test_runner_calls_functions_inside_the_sandbox(runner):
    assert runner.call("add", 2, 3) == 5
    assert runner.call("add", a=[1], b=[2]) == [1, 2]
    assert runner.call("state.get", "calls") == 2


def test_runner_errors_come_back_as_runner_errors(runner):
    with pytest.raises(RunnerError, match="fail raised KeyError: 'missing'") as info:
        runner.call("fail")
    assert "Traceback" in info.value.traceback
    with pytest.raises(RunnerError, match="not JSON serializable"):
        runner.call("unjsonable")
    with pytest.raises(RunnerError, match="nope raised KeyError"):
        runner.call("nope")
    assert runner.call("add", 1, 1) == 2  # errors leave the process usable


def test_runner_timeouts_and_deaths_restart_cleanly(runner):
    with pytest.raises(RunnerError) as info:
        runner.call("spin", timeout=0.5)
    assert info.value.kind == "timeout"
    assert runner.call("add", 1, 2) == 3  # a fresh process from the same source
    with pytest.raises(RunnerError) as info:
        runner.call("die")
    assert info.value.kind == "died"
    assert runner.call("state.get", "calls") == 0


def test_runner_code_never_touches_the_host(runner):
    target = f"/tmp/agentgym-runner-{uuid.uuid4().hex}"
    assert runner.call("escape", target) is True  # it wrote the file... inside the sandbox
    assert not Path(target).exists()


def test_runner_reports_a_module_that_does_not_import(box):
    with pytest.raises(RunnerError, match="SyntaxError"):
        PythonRunner(box, "def broken(:\n")


FORGER = """
import json, os, threading, time

FORGED = json.dumps({"id": 1, "result": "FORGED", "nonce": None}) + "\\n"
for fd in range(1, 40):  # at import: every descriptor it has, ahead of any call
    try:
        os.write(fd, FORGED.encode() * 3)
    except OSError:
        pass


def flood():
    while True:
        for fd in range(1, 10):
            try:
                os.write(fd, FORGED.replace('"id": 1', '"id": 2').encode())
            except OSError:
                pass
        time.sleep(0.001)


threading.Thread(target=flood, daemon=True).start()


def honest():
    for fd in range(1, 40):
        try:
            os.write(fd, FORGED.encode())
        except OSError:
            pass
    harness = os.getppid()
    for path in (f"/proc/{harness}/fd/1", f"/proc/{harness}/fd/0", f"/proc/{harness}/mem"):
        try:
            with open(path, "w") as f:
                f.write(FORGED)
            return "reached " + path
        except OSError:
            pass
    return "real"
"""


def test_untrusted_code_cannot_forge_the_runners_answers(box):
    runner = PythonRunner(box, FORGER)
    assert [runner.call("honest") for _ in range(5)] == ["real"] * 5
    simple = PythonRunner(box, "import json, os\n\ndef f():\n    os.write(3, (json.dumps({'id': 1, 'result': "
                               "'FORGED'}) + '\\n').encode())\n    return 'real'\n")
    assert simple.call("f") == "real"  # the attack of issue 15: fd 3 was the reply channel


def test_answers_are_bounded(box):
    runner = PythonRunner(box, "def huge():\n    return 'x' * (20 << 20)\n\ndef small():\n    return 1\n")
    with pytest.raises(RunnerError, match="over"):
        runner.call("huge")
    assert runner.call("small") == 1


def test_a_planted_module_cannot_shadow_the_harness(box):
    box.write_file("/tmp/runner/json.py", b"raise SystemExit('shadowed')\n")
    box.write_file("/tmp/runner/os.py", b"raise SystemExit('shadowed')\n")
    assert PythonRunner(box, "def f():\n    return 1\n").call("f") == 1


def test_pool_hands_out_pristine_warm_sandboxes():
    require_backend("bwrap")
    with SandboxPool("bwrap", size=2) as pool:
        assert pool.idle == 2
        with pool.sandbox() as box:
            box.write_file("secret.txt", b"from the first user")
        seen = []
        for _ in range(4):
            with pool.sandbox(timeout=30) as box:
                seen.append(box.run("ls /work", timeout=10).stdout)
        assert seen == [b""] * 4


def test_pool_bounds_and_shares_under_concurrency():
    require_backend("bwrap")
    with SandboxPool("bwrap", size=2, warm=0) as pool:
        results, errors = [], []

        def user(i: int) -> None:
            try:
                with pool.sandbox(timeout=60) as box:
                    results.append(box.run(f"echo {i}", timeout=10).stdout)
            except Exception as e:  # collected and asserted below
                errors.append(e)

        threads = [threading.Thread(target=user, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and sorted(results) == sorted(f"{i}\n".encode() for i in range(6))
        first = pool.acquire()
        second = pool.acquire()
        with pytest.raises(TimeoutError, match="no sandbox became free"):
            pool.acquire(timeout=0.2)
        pool.release(first)
        pool.release(second)
    with pytest.raises(sandboxes.SandboxError, match="closed"):
        pool.acquire()


def test_bwrap_sandbox_outlives_the_thread_that_made_it():
    """bwrap's --die-with-parent follows the forking *thread*; a sandbox made in a finished thread must live."""
    require_backend("bwrap")
    import sandboxes

    made = []
    thread = threading.Thread(target=lambda: made.append(sandboxes.make("bwrap")))
    thread.start()
    thread.join()
    with made[0] as box:
        time.sleep(0.3)
        assert box.run("echo alive", timeout=10).stdout == b"alive\n"
