"""Episode starts kept in the store: the ``starts`` table, written with each episode, read as untrusted data.

A start (system prompt, first user message, the protocol's tools) is what the policy saw at reset. The runner
records it in the same transaction as the episode, so the viewer and the exporter read it instead of
rebuilding the env from the store's own suite (which would let a store choose what runs: see
:mod:`leaderboards.replay`). The table is added by the first writer that needs it, within schema version 1
(as the lease tables are): stores written before it have no starts, and readers treat that as "not stored".

What is read back is text from a file someone may have crafted: its JSON is parsed with bounds (size, depth,
type) and anything malformed counts as "not stored", never as an error.

>>> import sqlite3
>>> db = sqlite3.connect(":memory:")
>>> ensure_table(db); write_start(db, 7, Start("Be brief.", "You see a door.", None, "react"))
>>> read_start(db, 7)
Start(system_prompt='Be brief.', first_observation='You see a door.', tools=None, protocol='react')
>>> read_start(db, 8) is None
True
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .records import Start, utf8_text

STARTS_SCHEMA = """CREATE TABLE IF NOT EXISTS starts (
    episode_id INTEGER PRIMARY KEY REFERENCES episodes(id),
    system_prompt TEXT,
    first_observation TEXT NOT NULL,
    tools_json TEXT,
    protocol TEXT NOT NULL
)"""
MAX_TOOLS_JSON = 1 << 20
"""Longest stored tool list read back (characters); a longer one is not a start we wrote."""


def ensure_table(db: sqlite3.Connection) -> None:
    """Add the ``starts`` table to a store that lacks it (inside the caller's write transaction)."""
    db.execute(STARTS_SCHEMA)


def write_start(db: sqlite3.Connection, episode_id: int, start: Start) -> None:
    """Store ``start`` for ``episodes.id = episode_id`` (tools as JSON; text as UTF-8 can hold it)."""
    tools = None if start.tools is None else json.dumps(start.tools, ensure_ascii=False, sort_keys=True, default=str)
    db.execute("INSERT OR REPLACE INTO starts (episode_id, system_prompt, first_observation, tools_json, protocol)"
               " VALUES (?, ?, ?, ?, ?)", (episode_id, utf8_text(start.system_prompt),
                                           utf8_text(start.first_observation), utf8_text(tools), start.protocol))


def has_table(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'starts'").fetchone() is not None


def stored_ids(db: sqlite3.Connection) -> set[int]:
    """The ``episodes.id`` of every episode whose start is stored (none in a store from before the table)."""
    if not has_table(db):
        return set()
    return {row[0] for row in db.execute("SELECT episode_id FROM starts")}


def read_start(db: sqlite3.Connection, episode_id: int) -> Start | None:
    """The stored start of an episode, or ``None`` if none is stored (or what is stored is malformed)."""
    if not has_table(db):
        return None
    try:
        row = db.execute("SELECT system_prompt, first_observation, tools_json, protocol FROM starts "
                         "WHERE episode_id = ?", (episode_id,)).fetchone()
    except sqlite3.DatabaseError:  # a crafted table with other columns
        return None
    if row is None:
        return None
    system_prompt, first, tools_json, protocol = (row[k] for k in range(4))
    if not (isinstance(first, str) and isinstance(protocol, str) and isinstance(system_prompt, (str, type(None)))):
        return None
    tools = _tools(tools_json)
    if tools is False:
        return None
    return Start(system_prompt or None, first, tools, protocol)


def _tools(text: Any) -> list[dict[str, Any]] | None | bool:
    """The stored tool list, ``None`` for none, ``False`` when it is not a list of objects we could have written."""
    if text is None:
        return None
    if not isinstance(text, str) or len(text) > MAX_TOOLS_JSON:
        return False
    try:
        tools = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        return False
    return tools
