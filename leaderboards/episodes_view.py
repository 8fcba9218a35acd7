"""Stored episodes as turns: the one reader of a results store's episodes for the exporter and the viewer.

A store keeps, per episode, its outcome (the ``episodes`` row), one ``steps`` row per turn (the raw reply,
the native action, the observation after it, the reward, validity) and, since issue 31, its start (system
prompt, first observation, tools: :mod:`leaderboards.starts`). :class:`StartReader` reads starts: the stored
one, else, for a store written before starts were kept, a replay of the seeded reset (a pure function of the
entry and the seed) by :class:`StartReplayer`, but only for an entry :mod:`leaderboards.replay` allows: a
store is untrusted data and must not choose what this machine builds.

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

from .errors import LeaderboardError, StoreError
from .records import Start
from .replay import replay_refusal
from .starts import read_start
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
    episode_id: int = -1
    """``episodes.id`` in its store (where its start is kept)."""


class StartUnavailable(LeaderboardError):
    """An episode's start is not in the store and was not replayed (refused, or the replay failed): says why."""


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
    """The resolved entries of the suite a run played (as stored with it); malformed ones are left out (their
    episodes then have no entry: shown, never replayed)."""
    try:
        items = json.loads(run.suite_json)["entries"]
    except (ValueError, RecursionError, TypeError, KeyError):
        return []
    entries = []
    for item in items if isinstance(items, list) else []:
        try:
            entry = Entry(**item)
            if isinstance(entry.env_id, str) and isinstance(entry.kwargs, dict):
                entry.key  # noqa: B018  (it must be computable)
                entries.append(entry)
        except (TypeError, ValueError, RecursionError):
            continue
    return entries


def entry_verdicts(run: Run) -> dict[str, tuple[Entry, str | None]]:
    """``entry key -> (entry, why it must not be replayed or None)`` for the entries of a stored run."""
    return {e.key: (e, replay_refusal(run.suite, run.suite_version, run.suite_fingerprint, e))
            for e in run_entries(run)}


def _episode(run: Run, entry: Entry, row: sqlite3.Row, steps: list[sqlite3.Row]) -> StoredEpisode:
    turns = tuple(Turn(s["t"], s["reply"], s["action"], s["observation"], float(s["reward"]), bool(s["action_valid"]),
                       s["parse_error"], bool(s["terminated"]), bool(s["truncated"]), s["finish_reason"])
                  for s in steps)
    return StoredEpisode(run, entry, row["episode_index"], row["task"], row["repeat"], row["seed"], row["task_index"],
                         bool(row["won"]), float(row["score"]), float(row["return"]), bool(row["terminated"]),
                         bool(row["truncated"]), turns, row["id"])


class StartReplayer:
    """Replays seeded resets to recover episode starts; keeps one env per entry (close it when done)."""

    def __init__(self) -> None:
        self._envs: dict[str, Any] = {}

    def start(self, entry: Entry, episode_index: int) -> Start:
        """The start of episode ``episode_index`` of ``entry``: the reset the runner did, done again. Only for
        entries this machine's user chose, or that :mod:`leaderboards.replay` allows (:class:`StartReader`)."""
        from .episode import make_env, start_of

        env = self._envs.get(entry.key)
        if env is None:
            env = self._envs[entry.key] = make_env(entry)
        task = entry.task_of(episode_index)[0]
        options = {"task_index": task} if getattr(env.unwrapped, "num_tasks", None) is not None else None
        observation, info = env.reset(seed=entry.reset_seed(episode_index), options=options)
        return start_of(env, observation, info)

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()


class StartReader:
    """Starts of stored episodes: the one the store keeps, else an allowed replay (close it when done).

    ``replay=False`` reads only what the store keeps (no env is built: cheap enough to do by default); an
    episode whose start is not stored is then :class:`StartUnavailable` with the way to replay it."""

    def __init__(self, replay: bool = True) -> None:
        self._replayer = StartReplayer() if replay else None

    def start(self, db: sqlite3.Connection, episode_id: int, entry: Entry | None, episode_index: int,
              refusal: str | None) -> Start:
        """The start of ``episodes.id = episode_id``; :class:`StartUnavailable` says why there is none.

        ``entry`` is the episode's entry in its stored suite (``None`` if missing) and ``refusal`` the
        :func:`~leaderboards.replay.replay_refusal` of that entry."""
        stored = read_start(db, episode_id)
        if stored is not None:
            return stored
        reason = unavailable_reason(entry, refusal)
        if reason is None and self._replayer is None:
            reason = NOT_REPLAYED
        if reason is not None:
            raise StartUnavailable(reason)
        assert entry is not None and self._replayer is not None
        try:
            return self._replayer.start(entry, episode_index)
        except Exception as e:  # any env failure: the caller reports it instead of failing
            raise StartUnavailable(f"the store keeps no start and replaying the reset failed "
                                   f"({type(e).__name__}: {str(e)[:500]})") from None

    def close(self) -> None:
        if self._replayer is not None:
            self._replayer.close()


NOT_REPLAYED = ("the store keeps no start for this episode (written before starts were kept); write the page with "
                "`agentgym view --out FILE --starts` to replay it from its seed")


def unavailable_reason(entry: Entry | None, refusal: str | None) -> str | None:
    """Why an episode whose start is not stored cannot be replayed, or ``None`` if it can."""
    if entry is None:
        return "the store keeps no start and its entry is not in the run's stored suite"
    if refusal is not None:
        return f"the store keeps no start; {refusal}"
    return None
