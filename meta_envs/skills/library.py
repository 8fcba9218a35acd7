"""A skill library: a folder of skill folders, loaded whole or not at all, saved atomically, versioned.

On disk a library is a directory whose entries are skill folders (``<name>/SKILL.md`` plus resources,
see :mod:`meta_envs.skills.skill`); entries whose names start with ``.`` are ignored.

* :meth:`SkillLibrary.load` reads every folder into memory and validates all of them before returning;
  any problem (a bad SKILL.md, a name that differs from its folder, a symlink, a non-UTF-8 or oversized
  file) raises one :class:`LibraryError` listing every problem, and nothing is half-loaded.
* :meth:`SkillLibrary.save` writes the whole library into a temporary sibling directory, then renames it
  into place, so readers see the old library or the new one, never a mixture. Files are written as the
  exact UTF-8 bytes of :meth:`Skill.files`, so ``load(p).save(q)`` makes ``q`` byte-identical to ``p``
  for a library we wrote.
* :attr:`SkillLibrary.version` is a SHA-256 over the sorted skills' content hashes: equal libraries
  have equal versions, which is what a measured baseline arm is cached by.
* :meth:`~SkillLibrary.diff` names the skills added, removed and changed; :meth:`~SkillLibrary.diff_text`
  is the unified diff of their files, for review.
* Libraries are immutable: :meth:`~SkillLibrary.with_skill` and :meth:`~SkillLibrary.without` return new ones.

>>> from meta_envs.skills.skill import Skill
>>> lib = SkillLibrary().with_skill(Skill("boil-water", "Boil water."))
>>> lib.names(), len(lib.without("boil-water"))
(['boil-water'], 0)
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from agentgym_envs.core.errors import AgentGymError

from .skill import (DEFAULT_TOKEN_BUDGET, MAX_RESOURCES, SKILL_FILE, Skill, SkillFormatError,
                    parse_skill_md, skill_from_files)

MAX_SKILLS = 1000


class LibraryError(AgentGymError, ValueError):
    """A library could not be loaded, saved or changed; the message lists what was wrong and what to do."""


class UnknownSkill(LibraryError, KeyError):
    """A skill name that is not in the library; the message suggests the closest names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class LibraryDiff:
    """What changed from one library to another (``old.diff(new)``): skill names, sorted."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


class SkillLibrary:
    """An immutable, ordered-by-name collection of :class:`Skill` (see the module docstring)."""

    def __init__(self, skills: Iterable[Skill] = ()):
        by_name: dict[str, Skill] = {}
        for skill in skills:
            if not isinstance(skill, Skill):
                raise LibraryError(f"expected Skill objects, got {type(skill).__name__}; parse text with parse_skill_md")
            if skill.name in by_name:
                raise LibraryError(f"expected unique skill names, got {skill.name!r} twice; merge or rename one")
            by_name[skill.name] = skill
        if len(by_name) > MAX_SKILLS:
            raise LibraryError(f"expected at most {MAX_SKILLS} skills, got {len(by_name)}")
        self._skills = dict(sorted(by_name.items()))
        self._version: str | None = None

    # ----------------------------------------------------------------- reading
    def __len__(self) -> int:
        return len(self._skills)

    def __iter__(self) -> Iterator[Skill]:
        return iter(list(self._skills.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._skills

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SkillLibrary) and self.version == other.version

    def __hash__(self) -> int:
        return hash(self.version)

    def __repr__(self) -> str:
        return f"SkillLibrary({self.names()!r}, version={self.version[:12]!r})"

    def names(self) -> list[str]:
        """Skill names, sorted."""
        return list(self._skills)

    def get(self, name: str) -> Skill:
        """The skill called ``name``; :class:`UnknownSkill` (with the closest names) when there is none."""
        try:
            return self._skills[name]
        except (KeyError, TypeError):
            close = difflib.get_close_matches(str(name), self.names(), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; the library holds {self.names()[:10]}"
            raise UnknownSkill(f"expected the name of a skill in the library, got {str(name)[:80]!r}{hint}") from None

    def index(self) -> list[tuple[str, str]]:
        """``(name, description)`` of every skill, sorted by name: what an index-style prompt shows."""
        return [(s.name, s.description) for s in self._skills.values()]

    @property
    def tokens(self) -> int:
        """Total body tokens over all skills (:func:`~meta_envs.skills.skill.count_tokens`)."""
        return sum(s.tokens for s in self._skills.values())

    @property
    def version(self) -> str:
        """SHA-256 (hex) over the sorted skills' content hashes; the empty library has a fixed version too."""
        if self._version is None:
            digest = hashlib.sha256(b"agentgym-skill-library-v1\n")
            for skill in self._skills.values():
                digest.update(f"{skill.name}\0{skill.content_hash}\n".encode())
            self._version = digest.hexdigest()
        return self._version

    def diff(self, other: SkillLibrary) -> LibraryDiff:
        """What ``other`` adds, removes and changes relative to this library (``old.diff(new)``)."""
        mine, theirs = self._skills, other._skills
        return LibraryDiff(added=tuple(sorted(set(theirs) - set(mine))),
                           removed=tuple(sorted(set(mine) - set(theirs))),
                           changed=tuple(sorted(n for n in set(mine) & set(theirs) if mine[n] != theirs[n])))

    def diff_text(self, other: SkillLibrary, *, context: int = 3) -> str:
        """A unified diff of every file that differs from this library to ``other`` (``old.diff_text(new)``),
        paths as ``<skill>/<file>``: what a person reviews before sharing a library. Empty when equal."""
        mine, theirs = _library_files(self), _library_files(other)
        chunks = []
        for path in sorted(set(mine) | set(theirs)):
            old, new = mine.get(path), theirs.get(path)
            if old == new:
                continue
            chunks.extend(difflib.unified_diff(
                (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
                fromfile=f"a/{path}" if old is not None else "/dev/null",
                tofile=f"b/{path}" if new is not None else "/dev/null", n=context))
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in chunks)

    # ----------------------------------------------------------------- new libraries
    def with_skill(self, skill: Skill, *, token_budget: int = DEFAULT_TOKEN_BUDGET) -> SkillLibrary:
        """A new library with ``skill`` added, or replacing the skill of the same name.

        The skill is re-validated through its files (a hand-built ``Skill`` with a bad name or an
        over-budget body raises :class:`~meta_envs.skills.skill.SkillFormatError`).
        """
        check_skill(skill, token_budget=token_budget)
        return SkillLibrary([*(s for s in self._skills.values() if s.name != skill.name), skill])

    def without(self, name: str) -> SkillLibrary:
        """A new library without the skill ``name`` (:class:`UnknownSkill` when it is not there)."""
        self.get(name)
        return SkillLibrary(s for s in self._skills.values() if s.name != name)

    # ----------------------------------------------------------------- disk
    @classmethod
    def load(cls, path: str | os.PathLike[str], *, token_budget: int = DEFAULT_TOKEN_BUDGET) -> SkillLibrary:
        """Read and validate every skill folder under ``path``; all or nothing (see the module docstring)."""
        root = Path(path)
        if not root.is_dir():
            raise LibraryError(f"expected a library directory of skill folders, got {str(root)!r} "
                               f"({'a file' if root.exists() else 'missing'})")
        skills, problems = [], []
        for entry in sorted(root.iterdir()):
            if entry.name.startswith("."):
                continue
            try:
                skills.append(_load_skill_folder(entry, token_budget))
            except (SkillFormatError, LibraryError) as e:
                problems.append(f"{entry.name}: {e}")
        if problems:
            raise LibraryError(f"{len(problems)} problem(s) in library {str(root)!r}; nothing was loaded:\n  "
                               + "\n  ".join(problems))
        return cls(skills)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the library to ``path`` atomically (temp sibling dir, then rename), replacing a library there.

        Refuses (``LibraryError``) to replace a directory holding anything but skill folders (hidden
        entries such as ``.git`` included), so a wrong path cannot wipe unrelated files.
        """
        root = Path(path)
        if root.exists():
            _check_replaceable(root)
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.new-", dir=root.parent))
        try:
            for skill in self._skills.values():
                _write_skill(staging / skill.name, skill)
            _swap_into_place(staging, root)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise


def check_skill(skill: Skill, *, token_budget: int = DEFAULT_TOKEN_BUDGET) -> Skill:
    """``skill`` if writing it out and reading it back gives the same skill under the format's rules;
    else :class:`~meta_envs.skills.skill.SkillFormatError` saying what is wrong."""
    if not isinstance(skill, Skill):
        raise SkillFormatError(f"expected a Skill, got {type(skill).__name__}")
    again = skill_from_files(skill.files(), folder_name=skill.name, token_budget=token_budget)
    if again != skill:
        raise SkillFormatError(f"expected skill {skill.name!r} to survive a write and a read unchanged, got a "
                               "different skill; build it with parse_skill_md")
    return skill


def load_skill(path: str | os.PathLike[str], *, token_budget: int = DEFAULT_TOKEN_BUDGET) -> Skill:
    """One skill folder read and validated (the same rules as :meth:`SkillLibrary.load` applies to each)."""
    folder = Path(path)
    try:
        return _load_skill_folder(folder, token_budget)
    except SkillFormatError as e:
        raise SkillFormatError(f"{folder.name}: {e}") from None


def _library_files(library: SkillLibrary) -> dict[str, str]:
    return {f"{skill.name}/{path}": text for skill in library for path, text in skill.files().items()}


def _load_skill_folder(folder: Path, token_budget: int) -> Skill:
    if folder.is_symlink() or not folder.is_dir():
        raise LibraryError(f"expected a skill folder (not a symlink or file), got {folder.name!r}; "
                           "move loose files into a skill folder")
    files: dict[str, str] = {}
    for file in _entries(folder):
        relative = file.relative_to(folder).as_posix()
        if file.is_symlink():
            raise LibraryError(f"expected plain files, got a symlink {relative!r}; copy the file in instead")
        if file.is_dir():
            continue
        if not file.is_file():
            raise LibraryError(f"expected plain files, got a special file {relative!r}")
        files[relative] = _read_text(file, relative)
    if SKILL_FILE not in files:
        raise LibraryError(f"expected {SKILL_FILE} in the skill folder, got {sorted(files)[:5]}")
    return skill_from_files(files, folder_name=folder.name, token_budget=token_budget)


def _entries(folder: Path) -> list[Path]:
    """Everything under ``folder``, sorted; stops early on a folder far too big to be a skill (a hostile tree)."""
    entries = []
    for entry in folder.rglob("*"):
        entries.append(entry)
        if len(entries) > 4 * MAX_RESOURCES:
            raise LibraryError(f"expected at most {MAX_RESOURCES} files in a skill, got more than {4 * MAX_RESOURCES} entries")
    return sorted(entries)


def _read_text(file: Path, relative: str) -> str:
    from .skill import MAX_RESOURCE_CHARS

    if file.stat().st_size > 4 * MAX_RESOURCE_CHARS:
        raise LibraryError(f"expected files of at most {MAX_RESOURCE_CHARS} characters, got {relative!r} "
                           f"of {file.stat().st_size} bytes")
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise LibraryError(f"expected UTF-8 text, got undecodable bytes in {relative!r}") from None


def _write_skill(folder: Path, skill: Skill) -> None:
    for relative, text in skill.files().items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())


def _check_replaceable(root: Path) -> None:
    if root.is_symlink() or not root.is_dir():
        raise LibraryError(f"expected {str(root)!r} to be a library directory to replace, got a file or symlink")
    strays = [e.name for e in root.iterdir()  # hidden entries too: replacing would delete a .git
              if not (e.is_dir() and not e.is_symlink() and (e / SKILL_FILE).is_file())]
    if strays:
        raise LibraryError(f"refusing to replace {str(root)!r}: it holds {strays[:5]}, which are not skill "
                           "folders; save somewhere else or move them away")


def _swap_into_place(staging: Path, root: Path) -> None:
    """Rename ``staging`` to ``root``; an existing ``root`` is renamed aside first and removed after."""
    if not root.exists():
        os.rename(staging, root)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
    os.rmdir(old)
    os.rename(root, old)
    try:
        os.rename(staging, root)
    except BaseException:
        os.rename(old, root)
        raise
    shutil.rmtree(old, ignore_errors=True)


__all__ = ["LibraryDiff", "LibraryError", "SkillLibrary", "UnknownSkill", "check_skill", "load_skill", "parse_skill_md"]
