"""Env versions in suites, stores and reports: the CHANGELOG's env-version policy, enforced in one place.

An env id ``namespace/Name-vN`` carries its version ``N``, bumped whenever the env's dynamics, text or reward
change, so a number reported on ``agentgym/Maze-v0`` always means the same task. Two versions of one env
(same ``namespace/Name``, different ``N``) measure different tasks, so results on them must never be pooled:

* a suite naming both is refused at load (:mod:`leaderboards.suite`);
* a store refuses a run of a suite version whose other runs ran another version of one of its envs
  (:mod:`leaderboards.store`), and a report refuses to put them in one table (:mod:`leaderboards.report`).
  Moving a suite to a new env version is a new suite version, which gets a table of its own.

Each run also records which env ids (with their versions) it ran and which agentgym release played them, in
the ``env_versions`` table. Like ``starts`` it is added by the first writer that needs it, within schema
version 1: stores written before it have none, and readers treat that as "not recorded".

>>> split_version("agentgym/Household-PickTwo-v3")
('agentgym/Household-PickTwo', 3)
>>> first_clash([("agentgym/Maze-v0", "a"), ("agentgym/Maze-Easy-v1", "a"), ("agentgym/Maze-v1", "b")])
(('agentgym/Maze-v0', 'a'), ('agentgym/Maze-v1', 'b'))
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from collections.abc import Iterable

ENV_VERSIONS_SCHEMA = """CREATE TABLE IF NOT EXISTS env_versions (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    env_id TEXT NOT NULL,
    env_name TEXT NOT NULL,
    env_version INTEGER,
    agentgym_version TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    PRIMARY KEY (run_id, env_id, agentgym_version)
)"""
"""``env_name`` is the id without its ``-vN``; ``env_version`` is ``N`` (NULL for an id without one). A run
resumed by another agentgym release gets a row per release, so every release that played it is named."""

_VERSIONED = re.compile(r"^(?P<name>.+)-v(?P<version>0|[1-9][0-9]*)$")  # gymnasium's -vN suffix


def split_version(env_id: str) -> tuple[str, int | None]:
    """``(id without -vN, N)``; an id without a version suffix is its own name, with version ``None``."""
    match = _VERSIONED.match(env_id)
    return (match["name"], int(match["version"])) if match else (env_id, None)


def first_clash(ids: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], tuple[str, str]] | None:
    """The first two ``(env_id, where)`` pairs naming different versions of one env, or ``None``.

    ``where`` labels each id's origin (a run, a store) for the caller's message."""
    seen: dict[str, tuple[str, str]] = {}
    for env_id, where in ids:
        first = seen.setdefault(split_version(env_id)[0], (env_id, where))
        if first[0] != env_id:
            return first, (env_id, where)
    return None


def suite_env_ids(suite_json: str) -> list[str]:
    """The env ids of a stored run's resolved suite (``runs.suite_json``: text from a file, so read with care)."""
    import json

    try:
        entries = json.loads(suite_json).get("entries")
    except (ValueError, AttributeError):
        return []
    return [e["env_id"] for e in entries if isinstance(e, dict) and isinstance(e.get("env_id"), str)] \
        if isinstance(entries, list) else []


def clash_line(suite: str, clash: tuple[tuple[str, str], tuple[str, str]], remedy: str) -> str:
    """The one line that refuses to pool results of two versions of one env within ``suite`` (``name vN``)."""
    (old, old_where), (new, new_where) = clash
    return (f"suite {suite} ran {old} in {old_where} but {new} in {new_where}: results of two versions of one env "
            f"must not mix (docs/leaderboards.md#env-versions); {remedy}")


def package_version() -> str:
    """The installed agentgym release (``unknown`` when run from a tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentgym")
    except PackageNotFoundError:
        return "unknown"


def record_versions(db: sqlite3.Connection, run_id: int, env_ids: Iterable[str], release: str) -> None:
    """Record that ``release`` of agentgym plays ``env_ids`` in run ``run_id`` (adding the table if missing)."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    with db:
        db.execute(ENV_VERSIONS_SCHEMA)
        db.executemany("INSERT OR IGNORE INTO env_versions (run_id, env_id, env_name, env_version, agentgym_version,"
                       " recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
                       [(run_id, env_id, *split_version(env_id), release, now) for env_id in dict.fromkeys(env_ids)])


def releases(db: sqlite3.Connection, run_id: int) -> list[str]:
    """The agentgym releases recorded as having played run ``run_id``; ``[]`` for a store from before 0.2.0."""
    try:
        rows = db.execute("SELECT DISTINCT agentgym_version FROM env_versions WHERE run_id = ? ORDER BY recorded_at,"
                          " agentgym_version", (run_id,))
        return list(dict.fromkeys(str(r[0])[:40] for r in rows))  # text from a file: bounded
    except sqlite3.OperationalError:  # no such table: written before versions were recorded
        return []
