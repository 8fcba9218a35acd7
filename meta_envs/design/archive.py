"""The archive of accepted generated envs: one folder per env, named by the SHA-256 of its source.

Layout (``docs/meta_envs.md``)::

    <archive>/<sha>/env.py          the module, byte for byte as the designer wrote it
    <archive>/<sha>/record.json     gates, stats (of the gates), play_stats, reward, reward_components,
                                    round, parent, index (its place in the archive), sha256
    <archive>/rejected/<sha>.json   a rejected design's failed gate and detail (exemplars for the brief)
    <archive>/.fingerprint_key      32 random bytes (mode 0600), drawn on first use: the secret the seeds
                                    of behaviour fingerprints are keyed by (:meth:`EnvArchive.fingerprint_key`)

Writes are atomic (a temp folder renamed into place), so a crash never leaves half an entry and two
writers of the same env agree. A run that owns the archive (``agentgym selfplay``) holds
:meth:`EnvArchive.writer`, an advisory lock on ``<archive>/.writer.lock``: a second such run is refused
with :class:`ArchiveBusy` instead of interleaving its rounds and report with the first's. Reading checks that ``env.py`` still hashes to its folder's name and
skips (and reports) entries that do not, so a tampered file is never played under an accepted name.
Records are JSON; nothing here unpickles or imports a module: the archived source runs only in a
sandbox (:mod:`meta_envs.design.generated`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SAMPLING_RULES = ("uniform", "newest", "learnable")
FINGERPRINT_KEY = ".fingerprint_key"
KEY_BYTES = 32
_SHA = re.compile(r"[0-9a-f]{64}")


class ArchiveError(ValueError):
    """A bad archive request (unknown sha, bad rule, empty archive); the message says what to do."""


class ArchiveBusy(ArchiveError):
    """Another process holds the lock this one needs (one line: what is locked, by which pid, what to do)."""


@contextmanager
def exclusive(lock_path: str | os.PathLike, what: str) -> Iterator[None]:
    """Hold an exclusive advisory lock (``flock``) on ``lock_path`` (created) for the ``with`` block.

    Never waits: a lock held by another process raises :class:`ArchiveBusy` at once. The lock dies with its
    holder (the kernel drops it when the process exits, however it exits), so no stale lock outlives a crash;
    the file keeps the holder's pid for the message.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise ArchiveBusy(f"{what} is in use by another run (pid {holder}); wait for it to finish, "
                              "or use another path") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def source_sha(source: str) -> str:
    """The archive key of a module: SHA-256 of its UTF-8 bytes (surrogates kept, never lost)."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ArchiveEntry:
    """One accepted env: its key, source and record (``record["stats"]["fingerprint"]`` for novelty)."""

    sha: str
    source: str
    record: dict

    @property
    def sha256(self) -> str:
        return self.sha

    @property
    def fingerprint(self) -> Any:
        return (self.record.get("stats") or {}).get("fingerprint")

    @property
    def p_hat(self) -> float | None:
        return (self.record.get("play_stats") or {}).get("p_solver")


def json_safe(value: Any) -> Any:
    """``value`` with non-finite floats as None and tuples as lists, so records are strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def _write_json_atomic(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(json_safe(data), f, sort_keys=True, indent=1, allow_nan=False)
    os.replace(tmp, path)


class EnvArchive:
    """Accepted envs stored by SHA-256 of their source under ``path`` (created when missing)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.problems: list[str] = []
        """Entries skipped on the last read (a source that no longer matches its name, unreadable JSON)."""

    def __len__(self) -> int:
        return len(self.entries())

    def writer(self) -> AbstractContextManager[None]:
        """The archive's single-writer lock (see the module docstring); raises :class:`ArchiveBusy` if held."""
        return exclusive(self.path / ".writer.lock", f"archive {self.path}")

    def fingerprint_key(self) -> bytes:
        """The archive's secret for fingerprint seeds (:func:`meta_envs.design.novelty.fingerprint_seeds`).

        Drawn from the OS on first use and kept in ``<archive>/.fingerprint_key`` (mode 0600), so every
        module measured against this archive, by any host process, is fingerprinted on the same seeds and
        its fingerprint compares with the archived ones. Never shown to a module (sandboxes do not see the
        archive) or the designer. Two processes creating it at once agree: the file appears whole (a hard
        link of a finished temp file) and the loser reads the winner's. ``OSError`` if the folder is unusable.
        """
        path = self.path / FINGERPRINT_KEY
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            key = self._new_key(path)
        if len(key) != KEY_BYTES:
            raise ArchiveError(f"{path}: expected {KEY_BYTES} bytes, got {len(key)}; remove it to draw a new key "
                               "(archived fingerprints then no longer compare with new ones)")
        return key

    def _new_key(self, path: Path) -> bytes:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-key-", dir=self.path)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(KEY_BYTES))
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another process drew it first: its key stands
            return path.read_bytes()
        finally:
            os.unlink(tmp)

    def add(self, source: str, record: dict) -> str:
        """Store an accepted env; returns its sha. Adding the same source again keeps the first record."""
        sha = source_sha(source)
        target = self.path / sha
        if target.exists():
            return sha
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.path))
        try:
            (staging / "env.py").write_bytes(source.encode("utf-8", "surrogatepass"))
            full = {**record, "sha256": sha, "index": self._next_index()}
            (staging / "record.json").write_text(json.dumps(json_safe(full), sort_keys=True, indent=1, allow_nan=False),
                                                 encoding="utf-8")
            os.rename(staging, target)
        except OSError:
            if target.exists():  # another writer stored the same env first: theirs stands
                return sha
            raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return sha

    def add_rejected(self, source: str, failed_gate: str, detail: str, extra: dict | None = None) -> str:
        """Remember a rejected design (its failed gate and detail, not its code) for the brief's exemplars."""
        sha = source_sha(source)
        folder = self.path / "rejected"
        folder.mkdir(exist_ok=True)
        _write_json_atomic(folder / f"{sha}.json", {"sha256": sha, "failed_gate": failed_gate,
                                                    "detail": detail[:500], **(extra or {}),
                                                    "index": len(list(folder.glob("*.json")))})
        return sha

    def rejected(self) -> list[dict]:
        """Rejected designs in the order they were rejected."""
        folder = self.path / "rejected"
        records = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                records.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return sorted(records, key=lambda r: (r.get("index", 0), r.get("sha256", "")))

    def get(self, sha: str) -> ArchiveEntry:
        """The entry stored under ``sha`` (64 lowercase hex digits); :class:`ArchiveError` otherwise."""
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise ArchiveError(f"expected a sha256 (64 lowercase hex digits), got {sha!r:.80}")
        entry = self._read(self.path / sha)
        if entry is None:
            raise ArchiveError(f"no env {sha} in archive {self.path}"
                               + (f" ({self.problems[-1]})" if self.problems else "")
                               + "; list the archive's entries() for the stored ones")
        return entry

    def entries(self) -> list[ArchiveEntry]:
        """Every intact entry, oldest first (by the index given when it was added)."""
        self.problems = []
        try:
            folders = sorted(self.path.iterdir())
        except OSError as e:  # the folder is gone or unreadable: nothing can be served from it
            self.problems.append(f"{self.path}: cannot be listed ({type(e).__name__}: {e})")
            return []
        found = [self._read(p) for p in folders if _SHA.fullmatch(p.name)]
        return sorted((e for e in found if e is not None), key=lambda e: (e.record.get("index", 0), e.sha))

    def sample(self, rng: np.random.Generator, rule: str = "uniform") -> ArchiveEntry:
        """One entry by ``rule``: ``uniform``, ``newest`` or ``learnable`` (solver success nearest 0.5).

        Ties under ``learnable`` are broken uniformly with ``rng``, so the choice is deterministic per seed.
        """
        if rule not in SAMPLING_RULES:
            raise ArchiveError(f"rule: expected one of {', '.join(SAMPLING_RULES)}, got {rule!r}")
        entries = self.entries()
        if not entries:
            raise ArchiveError(f"archive {self.path} holds no accepted env; run EnvDesign-v0 or "
                               "agentgym selfplay to fill it")
        if rule == "newest":
            return entries[-1]
        if rule == "learnable":
            distance = [round(abs((e.p_hat if e.p_hat is not None else 0.0) - 0.5), 9) for e in entries]
            entries = [e for e, d in zip(entries, distance) if d == min(distance)]
        return entries[int(rng.integers(len(entries)))]

    def _next_index(self) -> int:
        return sum(1 for p in self.path.iterdir() if _SHA.fullmatch(p.name))  # OSError: the caller's to report

    def _read(self, folder: Path) -> ArchiveEntry | None:
        try:
            data = (folder / "env.py").read_bytes()
            record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            self.problems.append(f"{folder.name}: unreadable ({type(e).__name__})")
            return None
        if hashlib.sha256(data).hexdigest() != folder.name or not isinstance(record, dict):
            self.problems.append(f"{folder.name}: env.py does not hash to its folder name (tampered?)")
            return None
        return ArchiveEntry(folder.name, data.decode("utf-8", "surrogatepass"), record)
