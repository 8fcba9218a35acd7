"""The terminal family: shell tasks in a sandboxed, persistent bash session (``agentgym/Terminal-v0``).

Shipped tasks live in :mod:`agentgym_envs.terminal.tasks`; Terminal-Bench and Harbor task directories
load with :func:`~agentgym_envs.terminal.importers.load_task_dir` and run in the same env
(``TerminalEnv(tasks=[...])``). The sandboxes come from the top-level :mod:`sandboxes` package.

Names are imported on first use, so that ``import agentgym_envs`` (which registers this family) does not
load the sandbox layer.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "TerminalEnv": "env", "TerminalTask": "task", "make_task": "task", "CommandTests": "task",
    "PytestSummary": "verifiers", "RewardFile": "verifiers", "GradeReport": "task", "TaskRefused": "importers",
    "load_task_dir": "importers", "load_task_dirs": "importers", "load_terminal_bench": "importers",
    "load_harbor": "importers",
}
__all__ = [
    "CommandTests", "GradeReport", "PytestSummary", "RewardFile", "TaskRefused", "TerminalEnv", "TerminalTask",
    "load_harbor", "load_task_dir", "load_task_dirs", "load_terminal_bench", "make_task",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
