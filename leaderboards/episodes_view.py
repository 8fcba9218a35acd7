"""Stored episodes as turns: the one reader of a results store's episodes for the exporter and the viewer.

A store keeps, per episode, its outcome (the ``episodes`` row) and one ``steps`` row per turn (the raw reply,
the native action, the observation after it, the reward, validity). It does not keep the episode's start
(system prompt, first observation, tools): those are a pure function of the entry and the reset seed, so
:class:`StartReplayer` replays the seeded reset to get them, without a policy and without a step.

Episodes come in a fixed order (run name, suite, suite version, entry, episode index), the order that makes
an export deterministic and resumable.

>>> from leaderboards.suite import Entry
>>> replayer = StartReplayer()
>>> start = replayer.start(Entry("agentgym/Maze-Easy-v0", "examples", tasks=1, protocol="tool_calls"), 0)
>>> start.protocol, start.tools[0]["function"]["name"], bool(start.system_prompt)
('tool_calls', 'act', True)
>>> replayer.close()
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym_envs.chat import first_user_content

from .errors import StoreError
from .store import Run, Store
from .suite import Entry


@dataclass(frozen=True)
class Turn:
    """One stored turn: the reply as sampled, what it did, and what the env answered."""

    t: int
    reply: str
    action: str | None
    observation: str
    reward: float
    action_valid: bool
    parse_error: str | None
    terminated: bool
    truncated: bool
    finish_reason: str | None


@dataclass(frozen=True)
class StoredEpisode:
    """One stored episode of a run, with its suite entry and its turns."""

    run: Run
    entry: Entry
    episode_index: int
    task: int
    repeat: int
    seed: int
    task_index: int | None
    won: bool
    score: float
    ret: float
    terminated: bool
    truncated: bool
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Start:
    """An episode's start as its policy saw it: system prompt, first user message, the protocol's tools."""

    system_prompt: str | None
    first_observation: str
    tools: list[dict[str, Any]] | None
    protocol: str


def select_runs(store: Store, names: Sequence[str] | None = None) -> list[Run]:
    """The store's runs in export order, only those named in ``names`` when given (an unknown name is an error)."""
    runs = sorted(store.runs(), key=lambda r: (r.name, r.suite, r.suite_version))
    if names:
        missing = sorted(set(names) - {r.name for r in runs})
        if missing:
            known = ", ".join(sorted({r.name for r in runs})) or "none"
            raise StoreError(f"{store.path} has no run named {', '.join(missing)}; its runs: {known}")
        runs = [r for r in runs if r.name in set(names)]
    return runs


def episode_keys(store: Store, runs: Sequence[Run]) -> list[tuple[Run, str, int]]:
    """``(run, entry key, episode index)`` of every stored episode of ``runs``, in export order: a snapshot
    (episodes another runner stores later are not in it)."""
    keys = []
    for run in runs:
        rows = store.db.execute("SELECT entry, episode_index FROM episodes WHERE run_id = ? AND suite_version = ? "
                                "ORDER BY entry, episode_index", (run.id, run.suite_version))
        keys += [(run, entry, index) for entry, index in rows]
    return keys


def load_episode(store: Store, run: Run, entry: Entry, episode_index: int) -> StoredEpisode:
    """One stored episode of ``run`` with its turns (:class:`StoreError` if it is not stored)."""
    row = store.db.execute("SELECT * FROM episodes WHERE run_id = ? AND suite_version = ? AND entry = ? AND "
                           "episode_index = ?", (run.id, run.suite_version, entry.key, episode_index)).fetchone()
    if row is None:
        raise StoreError(f"run {run.name!r} has no stored episode {episode_index} of {entry.key}")
    return _episode(run, entry, row, store.steps(row["id"]))


def stored_episodes(store: Store, runs: Sequence[Run], *, keys: Sequence[tuple[Run, str, int]] | None = None,
                    skip: int = 0) -> Iterator[StoredEpisode]:
    """The stored episodes of ``runs`` in export order (those of ``keys``, an :func:`episode_keys` snapshot, when
    given), after the first ``skip`` (whose steps are not read)."""
    entries = {run.id: {e.key: e for e in run_entries(run)} for run in runs}
    for run, key, index in (episode_keys(store, runs) if keys is None else keys)[skip:]:
        entry = entries[run.id].get(key)
        if entry is None:
            raise StoreError(f"run {run.name!r}: episode entry {key!r} is not in its stored suite; the store was "
                             "edited by hand")
        yield load_episode(store, run, entry, index)


def run_entries(run: Run) -> list[Entry]:
    """The resolved entries of the suite a run played (as stored with it)."""
    return [Entry(**entry) for entry in json.loads(run.suite_json)["entries"]]


def _episode(run: Run, entry: Entry, row: sqlite3.Row, steps: list[sqlite3.Row]) -> StoredEpisode:
    turns = tuple(Turn(s["t"], s["reply"], s["action"], s["observation"], float(s["reward"]), bool(s["action_valid"]),
                       s["parse_error"], bool(s["terminated"]), bool(s["truncated"]), s["finish_reason"])
                  for s in steps)
    return StoredEpisode(run, entry, row["episode_index"], row["task"], row["repeat"], row["seed"], row["task_index"],
                         bool(row["won"]), float(row["score"]), float(row["return"]), bool(row["terminated"]),
                         bool(row["truncated"]), turns)


class StartReplayer:
    """Replays seeded resets to recover episode starts; keeps one env per entry (close it when done)."""

    def __init__(self) -> None:
        self._envs: dict[str, Any] = {}

    def start(self, entry: Entry, episode_index: int) -> Start:
        """The start of episode ``episode_index`` of ``entry``: the reset the runner did, done again."""
        from .episode import make_env

        env = self._envs.get(entry.key)
        if env is None:
            env = self._envs[entry.key] = make_env(entry)
        task = entry.task_of(episode_index)[0]
        options = {"task_index": task} if getattr(env.unwrapped, "num_tasks", None) is not None else None
        observation, info = env.reset(seed=entry.reset_seed(episode_index), options=options)
        tools = info.get("tools") if env.protocol.name == "tool_calls" else None
        return Start(info.get("system_prompt") or None, first_user_content(observation, info.get("instruction")),
                     list(tools) if tools else None, env.protocol.name)

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
