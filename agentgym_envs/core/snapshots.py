"""Snapshot bytes: pickled env state, sealed with the process tree's key, checked before anything is unpickled.

Env state is arbitrary Python (world models, RNG generators, parsers), so snapshots are pickles; and
unpickling runs code that the bytes name. A snapshot is therefore sealed with an HMAC-SHA256 tag under a
key only this process tree knows, and :func:`open_snapshot` compares the tag (``hmac.compare_digest``)
*before* it unpickles: bytes that this process tree did not write are refused with
:class:`~agentgym_envs.core.errors.SnapshotError` and never reach ``pickle``.

Layout: ``MAGIC`` (8 bytes) + tag (32 bytes) + pickle. The tag covers the magic and the pickle.

The key, one per process tree:

* taken from ``$AGENTGYM_SNAPSHOT_KEY`` (64 hex digits; at least 32) when it is set, else made from
  ``secrets`` at first use and written to ``os.environ`` so that every child process started later
  (``subprocess``, ``multiprocessing`` spawn, Ray workers started by ``ray.init`` afterwards) inherits it;
  forked children share it anyway;
* handed explicitly to :class:`~agentgym_envs.vector.TextVectorEnv` workers (a ``forkserver`` started
  before the key existed would not pass it on), which call :func:`install_key`;
* never given to sandboxes: they start from a fixed environment (``sandboxes.supervised.BASE_ENV``), so code
  an agent runs cannot read it and forge a snapshot.

To use snapshots across machines or runs (a Ray cluster, snapshots saved to disk and restored tomorrow),
set the same ``AGENTGYM_SNAPSHOT_KEY`` everywhere, e.g. ``export AGENTGYM_SNAPSHOT_KEY=$(openssl rand -hex 32)``
(or Ray's ``runtime_env={"env_vars": {...}}``). Anyone who holds the key can make snapshots that run code
when restored: treat it like a password.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import secrets
import threading
from typing import Any

from .errors import SnapshotError

#: Environment variable that carries the key to child processes (and lets users share it explicitly).
KEY_ENV = "AGENTGYM_SNAPSHOT_KEY"
#: First bytes of every sealed snapshot; the digit is the sealing format's version.
MAGIC = b"AGSNAP2\n"
TAG_BYTES = 32
MIN_KEY_BYTES = 16

_lock = threading.Lock()
_key: bytes | None = None


def _new_lock_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # a fork while another thread held the lock must not leave the child stuck


os.register_at_fork(after_in_child=_new_lock_after_fork)


def _parse_key(text: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) < MIN_KEY_BYTES:
        raise SnapshotError(f"expected ${KEY_ENV} to hold at least {2 * MIN_KEY_BYTES} hex digits, got "
                            f"{len(text.strip())} characters that are not such a key; set it to the output of "
                            "`openssl rand -hex 32`, or unset it to let each process tree make its own")
    return key


def snapshot_key() -> bytes:
    """This process tree's key: ``$AGENTGYM_SNAPSHOT_KEY``, or a fresh random one exported for children."""
    global _key
    with _lock:
        if _key is None:
            text = os.environ.get(KEY_ENV)
            if text:
                _key = _parse_key(text)
            else:
                _key = secrets.token_bytes(32)
                os.environ[KEY_ENV] = _key.hex()
        return _key


def install_key(key: bytes) -> None:
    """Adopt the parent's key (vector workers call this first), so snapshots pass both ways."""
    global _key
    if not isinstance(key, bytes) or len(key) < MIN_KEY_BYTES:
        raise SnapshotError(f"expected a snapshot key of at least {MIN_KEY_BYTES} bytes, got {type(key).__name__}")
    with _lock:
        _key = key
        os.environ[KEY_ENV] = key.hex()


def _tag(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, MAGIC + body, hashlib.sha256).digest()


def seal_snapshot(payload: Any) -> bytes:
    """Pickle ``payload`` and seal it with this process tree's key."""
    body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + _tag(snapshot_key(), body) + body


def open_snapshot(data: Any) -> Any:
    """The payload of a snapshot sealed in this process tree; anything else raises :class:`SnapshotError`
    and is never unpickled."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise SnapshotError(f"expected the bytes of a snapshot from get_state(), got {type(data).__name__}")
    if not data.startswith(MAGIC) or len(data) <= len(MAGIC) + TAG_BYTES:
        raise SnapshotError(f"expected a snapshot made by get_state() in this process tree (starting with {MAGIC!r}), "
                            f"got {len(data):,} bytes starting with {data[:len(MAGIC)]!r}; the bytes are not a "
                            "snapshot, are truncated, or come from an older agentgym: take a new one with get_state()")
    tag, body = data[len(MAGIC):len(MAGIC) + TAG_BYTES], data[len(MAGIC) + TAG_BYTES:]
    if not hmac.compare_digest(tag, _tag(snapshot_key(), body)):
        raise SnapshotError(f"expected a snapshot made by this process tree (sealed with its key), got {len(data):,} "
                            "bytes whose seal does not match: they were made by another process tree, or modified or "
                            f"truncated, and were not unpickled; to restore snapshots across processes or machines "
                            f"set the same ${KEY_ENV} in each of them")
    try:
        return pickle.loads(body)
    except Exception as e:  # our own sealed bytes, but they name code this process cannot import
        raise SnapshotError(f"snapshot bytes could not be decoded ({type(e).__name__}: {e}); restore it where the "
                            "env's code is importable (same agentgym version)") from e
