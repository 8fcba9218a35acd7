"""The shipped terminal tasks (eight categories) and the split/difficulty/category filters over them.

Splits are fixed by a hash of each task's id (about one task in five is ``test``), so adding a task never
moves another between splits.
"""

from __future__ import annotations

import hashlib

from ..task import DIFFICULTIES, TerminalTask
from . import build, data, files, git, permissions, processes, python, text

ALL_TASKS: tuple[TerminalTask, ...] = (
    *files.TASKS, *text.TASKS, *python.TASKS, *git.TASKS, *build.TASKS, *data.TASKS, *permissions.TASKS,
    *processes.TASKS,
)
CATEGORIES = tuple(dict.fromkeys(t.category for t in ALL_TASKS))
SPLITS = ("all", "train", "test")


def split_of(task: TerminalTask) -> str:
    return "test" if hashlib.sha256(task.id.encode()).digest()[0] % 5 == 0 else "train"


def builtin_tasks(split: str = "all", difficulty: str | None = None, category: str | None = None) -> list[TerminalTask]:
    """Shipped tasks of a split, optionally of one difficulty and/or category, in a fixed order."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES} or None, got {difficulty!r}")
    if category is not None and category not in CATEGORIES:
        raise ValueError(f"category must be one of {CATEGORIES} or None, got {category!r}")
    chosen = [
        t for t in ALL_TASKS
        if split in ("all", split_of(t)) and difficulty in (None, t.difficulty) and category in (None, t.category)
    ]
    if not chosen:
        raise ValueError(f"no shipped task has split={split!r}, difficulty={difficulty!r}, category={category!r}")
    return chosen
