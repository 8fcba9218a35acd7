"""The reflector's library operations: parsing one action into an operation, and applying it to a library.

One action is one operation (``agentgym/SkillLibrary-v0``):

* ``ADD`` followed by a whole SKILL.md (front matter and body; a Markdown code fence around it is
  allowed): a new skill; its name must not be in the library yet.
* ``EDIT <name>`` followed by a SKILL.md whose ``name`` is ``<name>``: replaces that skill.
* ``REMOVE <name>``.
* ``MERGE <a> <b>``, optionally followed by a SKILL.md for the merged skill (named ``a`` or a new
  name); without one, ``a`` keeps its front matter and gets ``b``'s body lines that it lacks appended.
  Both ``a`` and ``b`` leave the library; the merged skill goes in.
* ``KEEP`` (no change) and ``DONE`` (end the episode).

Anything else, a SKILL.md that breaks the format (:class:`~meta_envs.skills.skill.SkillFormatError`), or a
name that is not (or already) in the library raises :class:`OperationError` with an "expected X, got Y"
message.

>>> parse_operation("REMOVE heat-then-place")
Operation(verb='REMOVE', names=('heat-then-place',), skill_md=None)
>>> parse_operation("merge a b").names
('a', 'b')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from agentgym_envs.core.errors import AgentGymError

from .library import LibraryError, SkillLibrary
from .skill import DEFAULT_TOKEN_BUDGET, Skill, SkillFormatError, parse_skill_md

Verb = Literal["ADD", "EDIT", "REMOVE", "MERGE", "KEEP", "DONE"]
VERBS: tuple[str, ...] = ("ADD", "EDIT", "REMOVE", "MERGE", "KEEP", "DONE")
#: Names each verb takes after it.
ARITY = {"ADD": 0, "EDIT": 1, "REMOVE": 1, "MERGE": 2, "KEEP": 0, "DONE": 0}
_FENCE = re.compile(r"^```[A-Za-z]*\n(.*?)\n?```\s*$", re.DOTALL)


class OperationError(AgentGymError, ValueError):
    """An action that is no applicable library operation; the message says what was expected."""


@dataclass(frozen=True)
class Operation:
    """One parsed operation: its verb, the names it takes, and the SKILL.md text it brings (if any)."""

    verb: Verb
    names: tuple[str, ...]
    skill_md: str | None


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
    return Operation(verb, names, skill_md)  # type: ignore[arg-type]


def apply_operation(library: SkillLibrary, op: Operation, *, token_budget: int = DEFAULT_TOKEN_BUDGET) -> tuple[SkillLibrary, Skill | None]:
    """The library after ``op`` and the skill it wrote (``None`` for REMOVE/KEEP/DONE)."""
    try:
        if op.verb == "ADD":
            skill = _parse(op.skill_md, token_budget)
            if skill.name in library:
                raise OperationError(f"expected a new skill name for ADD, got {skill.name!r}, already in the library; use EDIT {skill.name}")
            return library.with_skill(skill, token_budget=token_budget), skill
        if op.verb == "EDIT":
            _need(library, op.names[0])
            skill = _parse(op.skill_md, token_budget)
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


def _parse(skill_md: str | None, token_budget: int) -> Skill:
    try:
        return parse_skill_md(skill_md or "", token_budget=token_budget)
    except SkillFormatError as e:
        raise OperationError(f"malformed SKILL.md: {e}") from None


def _need(library: SkillLibrary, name: str) -> None:
    if name not in library:
        raise OperationError(f"expected the name of a skill in the library, got {name[:64]!r}; the library holds {library.names()[:10]}")


def _merge(library: SkillLibrary, op: Operation, token_budget: int) -> tuple[SkillLibrary, Skill]:
    a, b = op.names
    if a == b:
        raise OperationError(f"expected two different skills to MERGE, got {a!r} twice")
    _need(library, a)
    _need(library, b)
    if op.skill_md is not None:
        merged = _parse(op.skill_md, token_budget)
    else:
        first, second = library.get(a), library.get(b)
        have = set(first.body.splitlines())
        extra = [line for line in second.body.splitlines() if line.strip() and line not in have]
        merged = replace(first, body=first.body.rstrip("\n") + ("\n\n" + "\n".join(extra) if extra else "") + "\n")
    rest = library.without(a).without(b)
    if merged.name in rest:
        raise OperationError(f"expected the merged skill's name to be new or {a!r}/{b!r}, got {merged.name!r}, another skill's")
    return rest.with_skill(merged, token_budget=token_budget), merged
