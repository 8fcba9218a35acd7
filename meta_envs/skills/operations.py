"""The reflector's library operations: parsing one action into an operation, and applying it to a library.

One action is one operation (``agentgym/SkillLibrary-v0``):

* ``ADD`` followed by a whole SKILL.md (front matter and body; a Markdown code fence around it is
  allowed): a new skill; its name must not be in the library yet.
* ``EDIT <name>`` followed by a SKILL.md whose ``name`` is ``<name>``: replaces that skill.
* ``REMOVE <name>``.
* ``MERGE <a> <b>``, optionally followed by a SKILL.md for the merged skill (named ``a`` or a new
  name); without one, ``a`` keeps its front matter and gets the blocks (paragraphs, ``Task:`` groups,
  numbered lists) of ``b``'s body that it lacks appended, so both procedures survive and a copy adds nothing.
  Both ``a`` and ``b`` leave the library; the merged skill goes in.
* ``KEEP`` (no change) and ``DONE`` (end the episode).

A skill's other files (a ``kind: code`` skill's ``scripts/skill.py`` and its ``tests/test_*.py``, resources)
follow its SKILL.md, each after a line ``=== <relative path> ===``.

Anything else, a SKILL.md that breaks the format (:class:`~meta_envs.skills.skill.SkillFormatError`), or a
name that is not (or already) in the library raises :class:`OperationError` with an "expected X, got Y"
message.

>>> parse_operation("REMOVE heat-then-place")
Operation(verb='REMOVE', names=('heat-then-place',), skill_md=None, files=())
>>> parse_operation("merge a b").names
('a', 'b')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from agentgym_envs.core.errors import AgentGymError

from .library import LibraryError, SkillLibrary
from .skill import DEFAULT_TOKEN_BUDGET, SKILL_FILE, Skill, SkillFormatError, parse_skill_md, skill_from_files

Verb = Literal["ADD", "EDIT", "REMOVE", "MERGE", "KEEP", "DONE"]
VERBS: tuple[str, ...] = ("ADD", "EDIT", "REMOVE", "MERGE", "KEEP", "DONE")
#: Names each verb takes after it.
ARITY = {"ADD": 0, "EDIT": 1, "REMOVE": 1, "MERGE": 2, "KEEP": 0, "DONE": 0}
_FILE = re.compile(r"^=== ([^\s=][^\n]*?) ===[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r"^```[A-Za-z]*\n(.*?)\n?```\s*$", re.DOTALL)


class OperationError(AgentGymError, ValueError):
    """An action that is no applicable library operation; the message says what was expected."""


@dataclass(frozen=True)
class Operation:
    """One parsed operation: its verb, the names it takes, and the SKILL.md text it brings (if any)."""

    verb: Verb
    names: tuple[str, ...]
    skill_md: str | None
    files: tuple[tuple[str, str], ...] = ()
    """The skill's other files, ``(relative path, text)``, in the order written."""


def parse_operation(text: str) -> Operation:
    """The :class:`Operation` in ``text`` (see the module docstring), or :class:`OperationError`."""
    stripped = text.strip()
    head, _, rest = stripped.partition("\n")
    words = head.split()
    verb = words[0].upper() if words else ""
    if verb not in VERBS:
        raise OperationError(f"expected an operation {', '.join(VERBS)} as the first word, got {head[:60]!r}")
    names = tuple(words[1:1 + ARITY[verb]])
    extra = words[1 + ARITY[verb]:]
    if len(names) < ARITY[verb]:
        raise OperationError(f"expected {verb} followed by {ARITY[verb]} skill name(s), got {head[:80]!r}")
    if extra:
        raise OperationError(f"expected nothing after {verb} {' '.join(names)} on its line, got {' '.join(extra)[:60]!r}; "
                             f"put the SKILL.md on the next lines")
    body = rest.strip("\n")
    fenced = _FENCE.match(body.strip())
    skill_md = (fenced.group(1) if fenced else body).strip("\n") + "\n" if body.strip() else None
    if verb in ("ADD", "EDIT") and skill_md is None:
        raise OperationError(f"expected {verb} to be followed by a whole SKILL.md (--- front matter --- body), got nothing")
    if verb in ("REMOVE", "KEEP", "DONE") and skill_md is not None:
        raise OperationError(f"expected {verb} {' '.join(names)} alone, got more lines after it")
    skill_md, files = _split_files(skill_md)
    return Operation(verb, names, skill_md, files)  # type: ignore[arg-type]


def _split_files(text: str | None) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """SKILL.md and the ``=== path ===`` sections after it."""
    if text is None:
        return None, ()
    parts = _FILE.split(text)
    files = tuple((parts[i], parts[i + 1].lstrip("\n")) for i in range(1, len(parts) - 1, 2))
    return parts[0].rstrip("\n") + "\n", files


def apply_operation(library: SkillLibrary, op: Operation, *, token_budget: int = DEFAULT_TOKEN_BUDGET) -> tuple[SkillLibrary, Skill | None]:
    """The library after ``op`` and the skill it wrote (``None`` for REMOVE/KEEP/DONE)."""
    try:
        if op.verb == "ADD":
            skill = _parse(op, token_budget)
            if skill.name in library:
                raise OperationError(f"expected a new skill name for ADD, got {skill.name!r}, already in the library; use EDIT {skill.name}")
            return library.with_skill(skill, token_budget=token_budget), skill
        if op.verb == "EDIT":
            _need(library, op.names[0])
            skill = _parse(op, token_budget)
            if skill.name != op.names[0]:
                raise OperationError(f"expected the edited SKILL.md to keep the name {op.names[0]!r}, got {skill.name!r}")
            return library.with_skill(skill, token_budget=token_budget), skill
        if op.verb == "REMOVE":
            _need(library, op.names[0])
            return library.without(op.names[0]), None
        if op.verb == "MERGE":
            return _merge(library, op, token_budget)
        return library, None
    except (SkillFormatError, LibraryError) as e:
        raise OperationError(str(e)) from None


def _parse(op: Operation, token_budget: int) -> Skill:
    try:
        if not op.files:
            return parse_skill_md(op.skill_md or "", token_budget=token_budget)
        if len({path for path, _ in op.files}) != len(op.files) or SKILL_FILE in dict(op.files):
            raise SkillFormatError(f"expected each file once after SKILL.md, got {[p for p, _ in op.files][:8]}")
        return skill_from_files({SKILL_FILE: op.skill_md or "", **dict(op.files)}, token_budget=token_budget)
    except SkillFormatError as e:
        raise OperationError(f"malformed SKILL.md: {e}") from None


def _need(library: SkillLibrary, name: str) -> None:
    if name not in library:
        raise OperationError(f"expected the name of a skill in the library, got {name[:64]!r}; the library holds {library.names()[:10]}")


def _blocks(body: str) -> list[str]:
    """A body's blank-line-separated blocks (a ``Task:`` block and a numbered list stay whole)."""
    return [block.strip("\n") for block in re.split(r"\n\s*\n", body) if block.strip()]


def _merge(library: SkillLibrary, op: Operation, token_budget: int) -> tuple[SkillLibrary, Skill]:
    a, b = op.names
    if a == b:
        raise OperationError(f"expected two different skills to MERGE, got {a!r} twice")
    _need(library, a)
    _need(library, b)
    if op.skill_md is not None:
        merged = _parse(op, token_budget)
    else:
        first, second = library.get(a), library.get(b)
        have = set(_blocks(first.body))
        extra = [block for block in _blocks(second.body) if block not in have]
        merged = replace(first, body=first.body.rstrip("\n") + "".join("\n\n" + block for block in extra) + "\n")
    rest = library.without(a).without(b)
    if merged.name in rest:
        raise OperationError(f"expected the merged skill's name to be new or {a!r}/{b!r}, got {merged.name!r}, another skill's")
    return rest.with_skill(merged, token_budget=token_budget), merged
