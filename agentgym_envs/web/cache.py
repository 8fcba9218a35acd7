"""On-disk cache for the generated catalogue and its search index.

Generating 10,000 products and indexing them takes about two seconds; 100,000 take about fifteen. Both are
pure functions of ``(vocabulary version, num_products, seed)``, so a process that finds them in the cache
loads them in a fraction of that. The cache lives in ``$AGENTGYM_CACHE_DIR/web`` (default
``~/.cache/agentgym/web``); set ``AGENTGYM_CACHE_DIR=off`` to disable it. Entries are written to a temporary
directory and renamed into place, so concurrent processes never read a half-written entry; a corrupt or
unreadable entry is rebuilt. The files are JSON (stamped with their layout's version) and ``.npy`` arrays
read with ``allow_pickle=False``: nothing in the cache is unpickled, so a planted file cannot run code (at
worst it is rebuilt, or shows wrong products when it imitates the layout exactly: keep the directory yours).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


def cache_root() -> Path | None:
    """The web family's cache directory, or ``None`` when caching is off or no directory is writable."""
    setting = os.environ.get("AGENTGYM_CACHE_DIR", "")
    if setting.lower() in {"off", "0", "none"}:
        return None
    base = Path(setting) if setting else Path.home() / ".cache" / "agentgym"
    try:
        root = base / "web"
        root.mkdir(parents=True, exist_ok=True)
        return root
    except OSError:
        return None


def cached(name: str, build: Callable[[], T], save: Callable[[T, Path], None], load: Callable[[Path], T]) -> T:
    """``load(entry)`` when the entry ``name`` exists, else ``build()`` then try to ``save`` it (best effort)."""
    root = cache_root()
    if root is None:
        return build()
    entry = root / name
    if entry.is_dir():
        try:
            return load(entry)
        except Exception:  # a stale or damaged entry (any decoding error) is rebuilt, never fatal
            shutil.rmtree(entry, ignore_errors=True)
    value = build()
    staging: Path | None = None
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
        save(value, staging)
        os.rename(staging, entry)
    except OSError:  # no space, a read-only disk, or another process won the rename: keep the built value
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return value
