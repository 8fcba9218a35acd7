"""Fork safety: after a process has used sandboxes, fork-based consumers still work and leave its sandboxes alone.

Before the fix, bwrap's module-level spawner thread was gone in a forked child while the executor still
believed it had one, so the child's first sandbox waited forever (gymnasium's ``AsyncVectorEnv`` with
``context="fork"`` hung after a Terminal env had been used in the parent).
"""

from __future__ import annotations

import json
import os
import select
import signal

import gymnasium
import pytest
from sandbox_backends import require_backend

import agentgym_envs  # noqa: F401  (registers the ids)
import sandboxes
from sandboxes import SandboxError


def _in_fork(fn, timeout: float = 60.0) -> dict:
    """Run ``fn()`` in a forked child and return the JSON it produced; a hung child fails the test."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        os.close(read_fd)
        try:
            result = fn()
        except BaseException as e:
            result = {"error": f"{type(e).__name__}: {e}"}
        os.write(write_fd, json.dumps(result).encode())
        os._exit(0)
    os.close(write_fd)
    try:
        if not select.select([read_fd], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the forked child hung for {timeout} s")
        data = b""
        while chunk := os.read(read_fd, 1 << 16):
            data += chunk
    finally:
        os.close(read_fd)
        os.waitpid(pid, 0)
    return json.loads(data)


def test_a_forked_child_makes_its_own_sandboxes_and_leaves_the_parents_alone():
    require_backend("bwrap")
    with sandboxes.make("bwrap") as parent_box:
        assert parent_box.run("echo parent", timeout=10).stdout == b"parent\n"

        def child() -> dict:
            with sandboxes.make("bwrap") as own:
                out = own.run("echo child", timeout=10).stdout.decode()
            try:
                parent_box.run("echo stolen", timeout=10)
                refused = ""
            except SandboxError as e:
                refused = str(e)
            parent_box.close()
            parent_box._finalizer()  # what the child's exit would run
            return {"out": out, "refused": refused}

        result = _in_fork(child)
        assert result.get("out") == "child\n", result
        assert "belongs to process" in result["refused"]
        assert parent_box.run("echo still mine", timeout=10).stdout == b"still mine\n"


@pytest.mark.parametrize("backend", sandboxes.REAL_BACKENDS)
def test_async_vector_env_forks_over_terminal_after_the_parent_used_one(backend):
    require_backend(backend)
    env = gymnasium.make("agentgym/Terminal-v0", backend=backend)
    env.reset(seed=0)
    obs, *_ = env.step("echo parent-was-here")
    assert "parent-was-here" in obs

    def child() -> dict:
        vector = gymnasium.vector.AsyncVectorEnv(
            [lambda: gymnasium.make("agentgym/Terminal-v0", backend=backend)] * 2,
            context="fork", shared_memory=False,
        )
        try:
            vector.reset(seed=[1, 2])
            observations, rewards, *_ = vector.step(["echo forked-ok", "echo forked-ok"])
            return {"observations": list(observations), "rewards": [float(r) for r in rewards]}
        finally:
            vector.close()

    result = _in_fork(child, timeout=240)
    assert "error" not in result, result
    assert all("forked-ok" in text for text in result["observations"]) and result["rewards"] == [0.0, 0.0]
    obs, *_ = env.step("echo parent-still-here")  # the parent's sandbox survived the children
    assert "parent-still-here" in obs
    env.close()
