"""Episode leases: several runners share one run in one store, and none of its episodes is done twice or lost.

A runner plays an episode only while it holds that episode's **lease**: a row of the ``leases`` table naming
the runner and an expiry time, claimed in one ``BEGIN IMMEDIATE`` transaction (so two claims never interleave),
renewed by a heartbeat thread every ``lease_s / 4`` seconds, and deleted in the same transaction that stores
the episode (or when the runner gives the episode up, or stops). An episode is claimable when it is not stored
and its lease is missing, expired, or held by a runner known to be dead: one on this host whose process is
gone (checked by pid and process start time, so a reused pid is not mistaken for it). Hence:

* **Exclusive**: while a runner lives and renews, no other runner plays its episodes.
* **Nothing lost**: a killed runner's episodes are claimed again, at once by a runner on the same host, after
  the lease expires (``lease_s``, wall clock) by one elsewhere.
* **Recorded once, whatever happens**: correctness never rests on the leases. The store's unique key keeps an
  episode to one row even if a stalled runner (stopped, starved past its expiry) plays an episode whose lease
  passed on; the second play is wasted work, not a second record. Episodes are pure functions of their seeds,
  so it does not matter which runner's copy is kept.

The ``runners`` table says who holds what (host, pid, start time): ``agentgym bench`` names them when it waits.
Both tables are created by the first runner that needs them; reports ignore them.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .store import Run

Key = tuple[str, int]
"""An episode of a run: ``(entry key, episode_index)``."""

LEASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS runners (
    owner TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    process_start TEXT NOT NULL,
    started_at TEXT NOT NULL,
    seen_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    run_id INTEGER NOT NULL,
    suite_version INTEGER NOT NULL,
    entry TEXT NOT NULL,
    episode_index INTEGER NOT NULL,
    owner TEXT NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (run_id, suite_version, entry, episode_index)
);
"""
FORGET_RUNNERS_AFTER_S = 24 * 3600.0


@dataclass(frozen=True)
class Owner:
    """A runner process that can hold leases."""

    id: str
    host: str
    pid: int
    process_start: str
    """The process's start time in clock ticks since boot (``/proc/PID/stat``), ``""`` where unknown."""
    started_at: str

    @classmethod
    def me(cls) -> Owner:
        host, pid = socket.gethostname(), os.getpid()
        return cls(f"{host}:{pid}:{uuid.uuid4().hex[:8]}", host, pid, _process_start(pid),
                   dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))

    def alive(self) -> bool | None:
        """``False`` if this runner's process is certainly gone; ``None`` when that cannot be told from here."""
        if self.host != socket.gethostname():
            return None
        if self.process_start:
            return _process_start(self.pid) == self.process_start
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started_at}"


def _process_start(pid: int) -> str:
    """Start time of a live (not zombie) process from ``/proc``; ``""`` if it is gone or ``/proc`` is missing."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return ""
    return "" if fields[0] in ("Z", "X") else fields[19]


@dataclass
class Claim:
    """What one claim got, and how many unstored episodes other live runners hold right now (who: ``holders``)."""

    keys: list[Key]
    elsewhere: int
    holders: list[Owner]


class LeaseBook:
    """One runner's leases on one run, through its own connection (the heartbeat thread shares it, under a lock).

    Use as a context manager: entering registers the runner and starts the heartbeat; leaving stops it and
    releases every lease still held, so a runner that stops early hands its episodes on at once.
    """

    def __init__(self, path: Path, run: Run, plan: list[Key], *, lease_s: float, owner: Owner | None = None):
        if lease_s <= 0:
            raise ValueError(f"lease_s must be > 0, got {lease_s}")
        self.run, self.plan, self.lease_s = run, plan, lease_s
        self.owner = owner or Owner.me()
        self.db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA synchronous=NORMAL")  # as the store's own writes: durable against a killed process
        self._lock = threading.Lock()
        self._settled = 0
        """Plan positions before this are stored, given up or this runner's: never claimable again."""
        self._stop = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)
        with self._transaction():
            for statement in filter(str.strip, LEASE_SCHEMA.split(";")):
                self.db.execute(statement)
            self.db.execute("INSERT OR REPLACE INTO runners VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (self.owner.id, run.id, self.owner.host, self.owner.pid, self.owner.process_start,
                             self.owner.started_at, time.time()))

    def claim(self, n: int, skip: set[Key]) -> Claim:
        """Lease up to ``n`` claimable episodes of the plan (in plan order), never one in ``skip``.

        ``skip`` only grows, and this runner's own leases end stored or in ``skip``, so the plan's prefix of
        such episodes is not looked at again. ``claim(0, skip)`` claims nothing and counts every episode
        held elsewhere (a claim that filled up stops counting early).
        """
        with self._transaction():
            now = time.time()
            stored = self._stored()
            leases = {(e, i): (o, x) for e, i, o, x in self.db.execute(
                "SELECT entry, episode_index, owner, expires_at FROM leases WHERE run_id = ? AND suite_version = ?",
                (self.run.id, self.run.suite_version))}
            live = self._live_owners({o for o, _ in leases.values()} - {self.owner.id})
            keys, elsewhere, held, settled = [], 0, set(), True
            for position in range(self._settled, len(self.plan)):
                key = self.plan[position]
                owner, expires = leases.get(key, (None, 0.0))
                if key in stored or key in skip or owner == self.owner.id:  # done, given up, or in flight here
                    self._settled += settled  # such a key never becomes claimable again: skip it next time
                    continue
                settled = False
                if owner is not None and expires > now and owner in live:
                    elsewhere += 1
                    held.add(owner)
                elif len(keys) < n:
                    keys.append(key)
                elif n:
                    break  # enough: the count of episodes held elsewhere is then a lower bound
            self.db.executemany("INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?, ?)",
                                [(self.run.id, self.run.suite_version, e, i, self.owner.id, now + self.lease_s)
                                 for e, i in keys])
            return Claim(keys, elsewhere, [live[o] for o in sorted(held)])

    def release(self, key: Key) -> None:
        """Hand an episode back (given up after repeated infrastructure failures: another runner may try it)."""
        with self._transaction():
            self.db.execute("DELETE FROM leases WHERE run_id = ? AND suite_version = ? AND entry = ? AND "
                            "episode_index = ? AND owner = ?",
                            (self.run.id, self.run.suite_version, *key, self.owner.id))

    def renew(self) -> None:
        """Push back the expiry of every lease this runner holds (the heartbeat does this)."""
        with self._transaction():
            now = time.time()
            self.db.execute("UPDATE leases SET expires_at = ? WHERE owner = ?", (now + self.lease_s, self.owner.id))
            self.db.execute("UPDATE runners SET seen_at = ? WHERE owner = ?", (now, self.owner.id))

    def _stored(self) -> set[Key]:
        rows = self.db.execute("SELECT entry, episode_index FROM episodes WHERE run_id = ? AND suite_version = ?",
                               (self.run.id, self.run.suite_version))
        return {(e, i) for e, i in rows}

    def _live_owners(self, ids: set[str]) -> dict[str, Owner]:
        """The lease holders among ``ids`` not known to be dead; forgets the runners that are (and stale ones)."""
        rows = {r[0]: Owner(r[0], r[1], r[2], r[3], r[4]) for r in self.db.execute(
            "SELECT owner, host, pid, process_start, started_at FROM runners")}
        dead = {i for i, o in rows.items() if i != self.owner.id and o.alive() is False}
        for table in ("runners", "leases"):  # a dead runner's leases go with it: its episodes are free again
            self.db.executemany(f"DELETE FROM {table} WHERE owner = ?", [(i,) for i in dead])
        self.db.execute("DELETE FROM runners WHERE seen_at < ? AND owner != ?",
                        (time.time() - FORGET_RUNNERS_AFTER_S, self.owner.id))
        unknown = Owner("?", "unknown host", 0, "", "unknown")  # a lease whose runner row is gone: trust its expiry
        return {i: rows.get(i, unknown) for i in ids if i not in dead}

    def _transaction(self) -> _Immediate:
        return _Immediate(self.db, self._lock)

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                self.renew()
            except sqlite3.Error:
                pass  # busy beyond the timeout: try again next beat (correctness does not depend on it)

    def __enter__(self) -> LeaseBook:
        self._heartbeat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._heartbeat.join()
        try:
            with self._transaction():
                self.db.execute("DELETE FROM leases WHERE owner = ?", (self.owner.id,))
                self.db.execute("DELETE FROM runners WHERE owner = ?", (self.owner.id,))
        except sqlite3.Error:
            pass  # the leases expire by themselves
        self.db.close()


class _Immediate:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error), holding the book's lock throughout."""

    def __init__(self, db: sqlite3.Connection, lock: threading.Lock):
        self.db, self.lock = db, lock

    def __enter__(self) -> None:
        self.lock.acquire()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            self.db.execute("ROLLBACK" if exc_type is not None else "COMMIT")
        finally:
            self.lock.release()
