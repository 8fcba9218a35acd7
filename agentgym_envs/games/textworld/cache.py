"""The on-disk cache of compiled TextWorld games: each game is generated once, then only loaded.

Layout: ``<root>/tw<textworld version>-gen<GENERATOR_VERSION>/<challenge>/level<L>-<split>/seed<S>-<digest>/``
holding ``game.z8`` (the compiled story), ``game.json`` (textworld's game data, which its state tracking
needs) and ``meta.json`` (the spec, settings, walkthrough). A new textworld or generator version therefore
lands in a new directory instead of reusing games built by the old code.

The root is, in order: the ``root`` argument (the env's ``cache_dir=`` kwarg), ``$AGENTGYM_CACHE_DIR/textworld``,
``$XDG_CACHE_HOME/agentgym/textworld``, ``~/.cache/agentgym/textworld``.

Concurrency: a game is generated into a private temporary directory beside its final place and moved there
with one atomic ``rename``, so a reader sees a complete game or none, and a crash leaves only a ``.tmp``
directory behind (safe to delete). An exclusive ``fcntl`` lock per game makes a second process that wants the
same game wait for the first instead of generating it again.

Prefetch a split ahead of training (processes may run in parallel; they share the work through the locks)::

    python -m agentgym_envs.games.textworld.cache cooking --difficulty medium --split train --count 200
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from agentgym_envs.games.textworld import generate
from agentgym_envs.games.textworld.challenges import GENERATOR_VERSION, GameSpec, resolve_level, split_seeds

Generator = Callable[[GameSpec, Path], Any]
_REQUIRED = (generate.GAME_FILE, generate.GAME_JSON, generate.META_FILE)


def default_cache_dir() -> Path:
    """Where games go when no ``cache_dir`` is given (see the module docstring for the order)."""
    root = os.environ.get("AGENTGYM_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "textworld"
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "agentgym" / "textworld"


class GameCache:
    """Compiled games by :class:`GameSpec`, generated on first use.

    ``generator(spec, out_dir)`` writes a game into ``out_dir``; the default is the process's generation
    worker (:func:`~agentgym_envs.games.textworld.generate.generate_in_worker`).
    """

    def __init__(self, root: str | os.PathLike | None = None, generator: Generator | None = None):
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self.version_dir = self.root / f"tw{_textworld_version()}-gen{GENERATOR_VERSION}"
        self._generator = generator

    def game_dir(self, spec: GameSpec) -> Path:
        level_dir = self.version_dir / spec.challenge / f"level{spec.level}-{spec.split}"
        return level_dir / f"seed{spec.seed}-{spec.digest()}"

    def contains(self, spec: GameSpec) -> bool:
        return _complete(self.game_dir(spec))

    def get(self, spec: GameSpec) -> Path:
        """Path of ``spec``'s compiled ``game.z8``, generating it first if it is not cached."""
        self.ensure(spec)
        return self.game_dir(spec) / generate.GAME_FILE

    def ensure(self, spec: GameSpec) -> bool:
        """Make sure ``spec``'s game is cached; ``True`` when this call generated it."""
        final = self.game_dir(spec)
        if _complete(final):
            return False
        final.parent.mkdir(parents=True, exist_ok=True)
        with _exclusive(final.parent / f"{final.name}.lock"):
            if _complete(final):  # another process generated it while we waited
                return False
            self._generate_into(spec, final)
        return True

    def _generate_into(self, spec: GameSpec, final: Path) -> None:
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
        try:
            generator = self._generator or generate.generate_in_worker  # looked up now: tests may replace it
            generator(spec, tmp)
            missing = [name for name in _REQUIRED if not (tmp / name).is_file()]
            if missing:
                raise generate.GenerationError(f"generating {spec} left no {', '.join(missing)} in {tmp}")
            if final.exists():  # an incomplete leftover (a copy interrupted by hand): replace it
                shutil.rmtree(final)
            os.rename(tmp, final)  # atomic: readers see the whole game or nothing
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _textworld_version() -> str:
    """textworld's version without importing it (the import takes seconds)."""
    try:
        return version("textworld")
    except PackageNotFoundError:
        raise ImportError("TextWorld games need the textworld package: pip install 'agentgym[games]'") from None


def _complete(game_dir: Path) -> bool:
    return all((game_dir / name).is_file() for name in _REQUIRED)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``lock_path`` (released by the OS if the process dies)."""
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prefetch(challenge: str, *, difficulty: str | None = None, level: int | None = None, split: str = "train",
             first: int = 0, count: int = 1, cache_dir: str | os.PathLike | None = None) -> int:
    """Generate tasks ``first .. first+count-1`` of a split into the cache; returns how many were new."""
    level = resolve_level(challenge, difficulty, level)
    seeds = split_seeds(split)[first:first + count]
    cache = GameCache(cache_dir)
    return sum(cache.ensure(GameSpec(challenge, level, split, seed)) for seed in seeds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Generate TextWorld games into the agentgym cache.")
    parser.add_argument("challenge", choices=["cooking", "treasure_hunter", "coin_collector", "simple"])
    parser.add_argument("--difficulty", choices=["easy", "medium", "hard"])
    parser.add_argument("--level", type=int)
    parser.add_argument("--split", default="train", choices=["train", "valid", "test"])
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--cache-dir")
    args = parser.parse_args(argv)
    new = prefetch(args.challenge, difficulty=args.difficulty, level=args.level, split=args.split,
                   first=args.first, count=args.count, cache_dir=args.cache_dir)
    print(f"{args.count} games ready ({new} generated) in {GameCache(args.cache_dir).version_dir}")


if __name__ == "__main__":
    main()
