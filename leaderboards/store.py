"""The results store: one SQLite file holding runs, episodes, their steps and infrastructure failures.

Why SQLite: one file that survives a killed process (each episode and its steps are one transaction, so a
kill leaves either the whole episode or none of it), unique keys that make a resumed run unable to record
an episode twice, and plain SQL for anyone who wants to query results themselves.

Keys: a run is ``(name, suite, suite_version)``; an episode is unique per
``(run_id, suite_version, entry, episode_index)``.

Several processes may write one store at once (runners sharing a run through :mod:`leaderboards.leases`,
or separate runs): the file is in WAL mode while written, every connection waits up to 30 s for a lock
(``busy_timeout``), and every write transaction starts with ``BEGIN IMMEDIATE``, so a read-then-write (a
run created twice, the schema created twice) cannot interleave with another writer's.

The ``schema_version`` table says how to read the file; a store from a newer agentgym is refused rather
than misread. The runners' ``leases`` and ``runners`` tables (:mod:`leaderboards.leases`) are added by the
first runner that needs them, within version 1: older readers ignore them; so are the ``starts`` table
(:mod:`leaderboards.starts`), each episode's start recorded with it, and ``env_versions``
(:mod:`leaderboards.env_versions`), the env versions and agentgym release of each run, whose policy the store
enforces: one version of each env per suite version. Opening never rewrites an existing file that
is not a healthy store of ours: it raises :class:`~leaderboards.errors.StoreError` and leaves it as it was.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .env_versions import clash_line, first_clash, package_version, record_versions, suite_env_ids
from .errors import StoreError
from .records import EpisodeRecord, InfraFailure, utf8_text
from .starts import ensure_table, write_start
from .suite import Suite

SCHEMA_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"

SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    policy TEXT NOT NULL,
    suite TEXT NOT NULL,
    suite_version INTEGER NOT NULL,
    suite_fingerprint TEXT NOT NULL,
    suite_json TEXT NOT NULL,
    config_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (name, suite, suite_version)
);
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    suite_version INTEGER NOT NULL,
    entry TEXT NOT NULL,
    env_id TEXT NOT NULL,
    family TEXT NOT NULL,
    episode_index INTEGER NOT NULL,
    task INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    task_index INTEGER,
    won INTEGER NOT NULL,
    score REAL NOT NULL,
    return REAL NOT NULL,
    steps INTEGER NOT NULL,
    invalid_actions INTEGER NOT NULL,
    terminated INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    prompt_chars INTEGER NOT NULL,
    completion_chars INTEGER NOT NULL,
    policy_s REAL NOT NULL,
    env_s REAL NOT NULL,
    wall_s REAL NOT NULL,
    attempts INTEGER NOT NULL,
    finished_at TEXT NOT NULL,
    UNIQUE (run_id, suite_version, entry, episode_index)
);
CREATE TABLE steps (
    episode_id INTEGER NOT NULL REFERENCES episodes(id),
    t INTEGER NOT NULL,
    reply TEXT NOT NULL,
    action TEXT,
    observation TEXT NOT NULL,
    reward REAL NOT NULL,
    terminated INTEGER NOT NULL,
    truncated INTEGER NOT NULL,
    action_valid INTEGER NOT NULL,
    parse_error TEXT,
    finish_reason TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    prompt_chars INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    env_s REAL NOT NULL,
    PRIMARY KEY (episode_id, t)
);
CREATE TABLE infra_errors (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    entry TEXT NOT NULL,
    episode_index INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    source TEXT NOT NULL,
    error TEXT NOT NULL,
    at TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class Run:
    """A stored run: one policy on one version of one suite."""

    id: int
    name: str
    policy: str
    suite: str
    suite_version: int
    suite_fingerprint: str
    suite_json: str
    config: dict[str, Any]


class Store:
    """An open results store; use :func:`open_store`. All writes happen through this object's methods."""

    def __init__(self, path: Path, connection: sqlite3.Connection):
        self.path, self.db = path, connection
        self._wal = False

    def _for_writing(self) -> None:
        """Switch to write-ahead logging before the first write of a run (not for reads: they leave the file as is).

        With WAL a commit is one append and no fsync: durable against a killed process (what runs die of),
        not against power loss. :meth:`close` folds the log back into one self-contained file.
        """
        if not self._wal:
            # Changing the journal mode needs the file to itself for a moment; SQLite can answer "database is
            # locked" at once (without its busy handler) while another runner opens, switches or closes the
            # same new store, so the switch is retried within the connection's 30 s lock budget.
            deadline = time.monotonic() + 30.0
            while True:
                try:
                    self.db.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.01)
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._wal = True

    # ----------------------------------------------------------------- runs
    def run(self, name: str, policy: str, suite: Suite, config: dict[str, Any]) -> Run:
        """The run ``(name, suite, version)``, created if new; refuses one whose suite or policy changed."""
        self._for_writing()
        self._check_env_versions(suite)
        found = self.find_run(name, suite.name, suite.version)
        if found is None:
            with self.db:  # OR IGNORE: another runner may have created the same run since the lookup
                self.db.execute(
                    "INSERT OR IGNORE INTO runs (name, policy, suite, suite_version, suite_fingerprint, suite_json,"
                    " config_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (name, policy, suite.name, suite.version, suite.fingerprint, suite.to_json(),
                     json.dumps(config, sort_keys=True), _now()))
            found = self.find_run(name, suite.name, suite.version)
            assert found is not None
        _check_same(found, policy, suite)
        record_versions(self.db, found.id, (e.env_id for e in suite.entries), package_version())
        return found

    def _check_env_versions(self, suite: Suite) -> None:
        """Refuse results on env versions other than those the stored runs of this suite version ran."""
        runs = [r for r in self.runs() if (r.suite, r.suite_version) == (suite.name, suite.version)]
        stored = [(env_id, f"run {r.name!r}") for r in runs for env_id in suite_env_ids(r.suite_json)]
        clash = first_clash(stored + [(e.env_id, "this run") for e in suite.entries])
        if clash:
            remedy = (f"bump the suite's 'version' when it moves to a new env version, or pass --store NEW_PATH "
                      f"(this one: {self.path})")
            raise StoreError(clash_line(f"{suite.name} v{suite.version}", clash, remedy))

    def find_run(self, name: str, suite: str, version: int) -> Run | None:
        row = self.db.execute("SELECT * FROM runs WHERE name = ? AND suite = ? AND suite_version = ?",
                              (name, suite, version)).fetchone()
        return None if row is None else _run(row)

    def runs(self) -> list[Run]:
        return [_run(r) for r in self.db.execute("SELECT * FROM runs ORDER BY id")]

    # ----------------------------------------------------------------- episodes
    def finished(self, run: Run) -> set[tuple[str, int]]:
        """``(entry, episode_index)`` of every episode already recorded for ``run``: never played again."""
        rows = self.db.execute("SELECT entry, episode_index FROM episodes WHERE run_id = ? AND suite_version = ?",
                               (run.id, run.suite_version))
        return {(e, i) for e, i in rows}

    def count(self, run: Run) -> int:
        """How many episodes of ``run`` are stored (by any runner)."""
        return self.db.execute("SELECT COUNT(*) FROM episodes WHERE run_id = ? AND suite_version = ?",
                               (run.id, run.suite_version)).fetchone()[0]

    def record_episode(self, run: Run, episode: EpisodeRecord, *, lease_owner: str | None = None) -> bool:
        """Write an episode and all its steps in one transaction; ``False`` if it was already there.

        With ``lease_owner``, the same transaction deletes that runner's lease on the episode
        (:mod:`leaderboards.leases`), so an episode is never both stored and leased.
        """
        with self.db:
            if lease_owner is not None:
                self.db.execute("DELETE FROM leases WHERE run_id = ? AND suite_version = ? AND entry = ? AND "
                                "episode_index = ? AND owner = ?", (run.id, run.suite_version, episode.entry,
                                                                    episode.episode_index, lease_owner))
            cursor = self.db.execute(
                "INSERT OR IGNORE INTO episodes (run_id, suite_version, entry, env_id, family, episode_index, task,"
                " repeat, seed, task_index, won, score, return, steps, invalid_actions, terminated, truncated,"
                " prompt_tokens, completion_tokens, prompt_chars, completion_chars, policy_s, env_s, wall_s,"
                " attempts, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " ?, ?, ?, ?)", (run.id, run.suite_version, *_episode_values(episode)))
            if cursor.rowcount == 0:
                return False
            episode_id = cursor.lastrowid
            self.db.executemany(
                "INSERT INTO steps (episode_id, t, reply, action, observation, reward, terminated, truncated,"
                " action_valid, parse_error, finish_reason, prompt_tokens, completion_tokens, prompt_chars,"
                " latency_s, env_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(episode_id, s.t, utf8_text(s.reply), utf8_text(s.action), utf8_text(s.observation), s.reward,
                  s.terminated, s.truncated, s.action_valid, utf8_text(s.parse_error), utf8_text(s.finish_reason), s.prompt_tokens, s.completion_tokens,
                  s.prompt_chars, s.latency_s, s.env_s) for s in episode.steps])
            if episode.start is not None:
                ensure_table(self.db)
                write_start(self.db, episode_id, episode.start)
        return True

    def record_infra_failure(self, run: Run, failure: InfraFailure) -> int:
        """Record a failed attempt, numbered among all stored attempts of its episode (by any runner); returns it."""
        where = (run.id, failure.entry, failure.episode_index)
        with self.db:
            cursor = self.db.execute(
                "INSERT INTO infra_errors (run_id, entry, episode_index, attempt, source, error, at) SELECT ?, ?, ?,"
                " COUNT(*) + 1, ?, ?, ? FROM infra_errors WHERE run_id = ? AND entry = ? AND episode_index = ?",
                (*where, failure.source, utf8_text(failure.error[:4000]), _now(), *where))
            failure.attempt = self.db.execute("SELECT attempt FROM infra_errors WHERE id = ?",
                                              (cursor.lastrowid,)).fetchone()[0]
        return failure.attempt

    def episode_rows(self, run: Run) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM episodes WHERE run_id = ? ORDER BY entry, episode_index", (run.id,)))

    def infra_rows(self, run: Run) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM infra_errors WHERE run_id = ? ORDER BY id", (run.id,)))

    def steps(self, episode_id: int) -> list[sqlite3.Row]:
        return list(self.db.execute("SELECT * FROM steps WHERE episode_id = ? ORDER BY t", (episode_id,)))

    def export_without_steps(self, path: str | Path) -> Path:
        """A copy of this store with runs, episodes and infra errors but no per-step rows (small enough to commit).

        The copy is a valid store: reports read it like any other. An existing file at ``path`` is refused.
        """
        path = Path(path)
        if path.exists():
            raise StoreError(f"{path} exists; export writes a new file (remove it or pick another path)")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db.execute("VACUUM INTO ?", (str(path),))
        copy = sqlite3.connect(str(path))
        try:
            with copy:
                copy.execute("DELETE FROM steps")
                copy.execute("DROP TABLE IF EXISTS leases")  # who was playing what: meaningless in a copy
                copy.execute("DROP TABLE IF EXISTS runners")
            copy.execute("PRAGMA journal_mode=DELETE")
            copy.execute("VACUUM")
        finally:
            copy.close()
        return path

    def close(self) -> None:
        """Close, folding the write-ahead log back into the one file (skipped if another reader holds it)."""
        if self._wal:
            try:
                self.db.execute("PRAGMA busy_timeout = 0")  # another runner still has it open: leave it in WAL
                self.db.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.OperationalError:
                pass
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(path: str | Path, *, create: bool = True) -> Store:
    """Open (and with ``create``, make) a store; a file that is not a healthy store of ours is left untouched."""
    path = Path(path).expanduser()
    if not path.exists():
        if not create:
            raise StoreError(f"no results store at {path}; run `agentgym bench` first or pass --store PATH")
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path.is_dir():
        raise StoreError(f"{path} is a directory; --store expects a file such as {path / 'results.sqlite'}")
    else:
        _check_header(path)
    try:
        db = sqlite3.connect(str(path), timeout=30.0, isolation_level="IMMEDIATE", check_same_thread=False)
        db.row_factory = sqlite3.Row
        _check_health(db, path)
        _ensure_schema(db, path)
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{path} is not a readable results store ({e}); it was left as it is. Move it aside "
                         "(your other results are in it, possibly recoverable with `sqlite3 .recover`) or pass "
                         "--store NEW_PATH.") from None
    return Store(path, db)


def default_store_path() -> Path:
    """``<user data dir>/agentgym/results.sqlite`` (platformdirs when installed, else XDG rules)."""
    try:
        from platformdirs import user_data_dir

        return Path(user_data_dir("agentgym", appauthor=False)) / "results.sqlite"
    except ImportError:
        import os

        base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
        return Path(base) / "agentgym" / "results.sqlite"


def _check_header(path: Path) -> None:
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head and head != SQLITE_MAGIC:
        raise StoreError(f"{path} is not an SQLite file (it starts with {head[:8]!r}); it was left as it is. "
                         "Pass --store with a new path, or move the file aside.")


def _check_health(db: sqlite3.Connection, path: Path) -> None:
    problems = [r[0] for r in db.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        raise StoreError(f"{path} is corrupted (SQLite reports: {'; '.join(problems)}); it was left as it is. "
                         "Recover what you can with `sqlite3 PATH .recover | sqlite3 NEW_PATH`, or pass --store NEW_PATH.")


def _ensure_schema(db: sqlite3.Connection, path: Path) -> None:
    tables = _tables(db)
    if not tables:
        with db:  # created under the write lock, after looking again: another runner may just have done it
            db.execute("BEGIN IMMEDIATE")
            tables = _tables(db)
            if not tables:
                for statement in filter(str.strip, SCHEMA.split(";")):
                    db.execute(statement)
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        if not tables:
            return
    if "schema_version" not in tables:
        raise StoreError(f"{path} is an SQLite file but not an agentgym results store (no schema_version table; "
                         f"it has {', '.join(sorted(tables))}); it was left as it is. Pass --store NEW_PATH.")
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    version = row[0] if row else None
    if version != SCHEMA_VERSION:
        newer = isinstance(version, int) and version > SCHEMA_VERSION
        what = "a newer agentgym; upgrade to read it" if newer else "an unknown version"
        raise StoreError(f"{path} has results-store schema version {version}, written by {what} "
                         f"(this agentgym reads version {SCHEMA_VERSION}); it was left as it is.")


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _check_same(run: Run, policy: str, suite: Suite) -> None:
    if run.suite_fingerprint != suite.fingerprint:
        raise StoreError(
            f"run {run.name!r} on suite {run.suite} v{run.suite_version} was recorded with a different definition of "
            f"that suite (fingerprint {run.suite_fingerprint}, now {suite.fingerprint}): the suite changed without a "
            "version bump. Bump its 'version' (results of different definitions must not mix), or pass --run NEW_NAME.")
    if run.policy != policy:
        raise StoreError(f"run name {run.name!r} already holds results of policy {run.policy!r}, not {policy!r}; "
                         "pass --run NEW_NAME to keep them apart.")


def _episode_values(e: EpisodeRecord) -> tuple[Any, ...]:
    completion_chars = sum(len(s.reply) for s in e.steps)
    return (e.entry, e.env_id, e.family, e.episode_index, e.task, e.repeat, e.seed, e.task_index, e.won, e.score,
            e.ret, e.num_steps, e.invalid_actions, e.terminated, e.truncated, e.total("prompt_tokens"),
            e.total("completion_tokens"), sum(s.prompt_chars for s in e.steps), completion_chars,
            sum(s.latency_s for s in e.steps), sum(s.env_s for s in e.steps), e.wall_s, e.attempts, _now())


def _run(row: sqlite3.Row) -> Run:
    return Run(row["id"], row["name"], row["policy"], row["suite"], row["suite_version"], row["suite_fingerprint"],
               row["suite_json"], json.loads(row["config_json"]))


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
