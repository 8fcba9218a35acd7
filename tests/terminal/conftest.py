"""Terminal env fixtures: one env per real backend for the session (its sandbox is reset between episodes).

The task-format fixtures under ``fixtures/`` are data (Terminal-Bench and Harbor task directories), not
tests of this suite, although Terminal-Bench names its test files ``test_*.py``.
"""

from __future__ import annotations

import pytest
from terminal_backends import require_backend

from agentgym_envs.terminal.env import TerminalEnv

collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(scope="session")
def terminal_envs():
    envs: dict[str, TerminalEnv] = {}
    yield envs
    for env in envs.values():
        env.close()


@pytest.fixture
def make_env(terminal_envs):
    """``make_env(backend)``: the session's env for a backend (fails, never skips, when it cannot run)."""

    def make(backend: str) -> TerminalEnv:
        require_backend(backend)
        if backend not in terminal_envs:
            terminal_envs[backend] = TerminalEnv(backend=backend)
        return terminal_envs[backend]

    return make
