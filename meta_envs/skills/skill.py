"""One skill: a folder holding ``SKILL.md`` in the agent-skills format, parsed and validated here.

A skill folder looks like::

    heat-then-place/
        SKILL.md              # YAML front matter + Markdown body (required)
        references/tips.md    # optional resources, loaded on demand (any UTF-8 text file)
        scripts/skill.py      # kind: code skills only: the script, run only inside a sandbox

``SKILL.md`` starts with YAML front matter between two ``---`` lines, then the body::

    ---
    name: heat-then-place
    description: Heat an object in the microwave, then put it somewhere. Use for "heat X and put it in Y".
    metadata:
      kind: text
    ---
    1. go to {object location}
    ...

Rules (each violation is a :class:`SkillFormatError` whose message says "expected X, got Y"):

* ``name``: 1–64 characters, lowercase letters, digits and single hyphens, no leading or trailing hyphen,
  equal to the folder name when there is one.
* ``description``: 1–1024 characters. ``compatibility`` (optional): at most 500 characters.
  ``license`` (optional): a string. ``metadata`` (optional): a map of string keys to string values.
  ``allowed-tools`` (optional): a string. No other front-matter keys, except ``kind`` (see below).
* ``kind``: ``text`` (default) or ``code``, read from ``metadata.kind`` (where we write it for code
  skills, so the file stays in the agent-skills format) or a top-level ``kind`` key; ``Skill.metadata``
  never holds ``kind`` (it is ``Skill.kind``). A code skill must bring ``scripts/skill.py``.
* The body: at most ``token_budget`` tokens (default 5000) by :func:`count_tokens`.
* Size bounds against hostile input: ``SKILL.md`` at most 256 KiB, each resource at most 256 KiB,
  at most 64 resources and 1 MiB in all; resource paths are relative, ``/``-separated, without ``..``.

**Round trip.** :meth:`Skill.to_skill_md` writes a canonical form (front-matter keys in a fixed order,
the body verbatim after the closing ``---`` line) and ``parse_skill_md(skill.to_skill_md()) == skill``,
so files we wrote read back and write out byte-identically. Line endings are normalised to ``\\n`` on
parse (so a CRLF file written elsewhere reads fine but is written back with ``\\n``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from agentgym_envs.core.errors import AgentGymError

SKILL_FILE = "SKILL.md"
SCRIPT_PATH = "scripts/skill.py"
DEFAULT_TOKEN_BUDGET = 5000
MAX_SKILL_MD_CHARS = 256 * 1024
MAX_RESOURCE_CHARS = 256 * 1024
MAX_RESOURCES = 64
MAX_TOTAL_CHARS = 1024 * 1024
MAX_NAME_CHARS, MAX_DESCRIPTION_CHARS, MAX_COMPATIBILITY_CHARS = 64, 1024, 500
FRONT_MATTER_KEYS = ("name", "description", "license", "compatibility", "allowed-tools", "metadata", "kind")
KINDS = ("text", "code")

_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_TOKEN = re.compile(r"\w{1,10}|[^\w\s]")
_PATH_PART = re.compile(r"[A-Za-z0-9._-]+")

Kind = Literal["text", "code"]


class SkillFormatError(AgentGymError, ValueError):
    """A SKILL.md (or a skill folder) breaks the format; the message says what was expected and what came."""


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by one tokenizer-free rule: word runs in pieces of up to 10 characters, plus one
    token per punctuation or symbol character; whitespace is free.

    It tracks a BPE tokenizer's count on English prose within a few tens of percent, and a hostile
    single 1 MB "word" still counts as 100k tokens rather than one.

    >>> count_tokens("Heat the apple, then put it in the fridge.")
    11
    >>> count_tokens("a" * 25)
    3
    """
    return len(_TOKEN.findall(text))


@dataclass(frozen=True)
class Skill:
    """A validated skill; build one with :func:`parse_skill_md` or :func:`skill_from_files`.

    Frozen, and equal (and hashed) by its files, so a library of skills can be versioned and cached.
    ``metadata`` and ``resources`` are the skill's own dict copies: read them, never mutate them (the
    canonical text and the content hash are computed once and cached).
    """

    name: str
    description: str
    body: str = ""
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    kind: Kind = "text"
    resources: Mapping[str, str] = field(default_factory=dict)
    """Relative path -> text of every file in the folder except SKILL.md and the script."""
    script: str | None = None
    """The ``kind: code`` skill's script (``scripts/skill.py``); run only inside a sandbox."""
    allowed_tools: str | None = None

    def __post_init__(self) -> None:
        # Own copies (plain dicts, so skills pickle into env snapshots); treat them as read-only.
        metadata = dict(self.metadata)
        kind = _check_kind(self.kind if self.kind != "text" else None, metadata.pop("kind", None))
        object.__setattr__(self, "metadata", metadata)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "resources", dict(sorted(self.resources.items())))

    def __hash__(self) -> int:
        return hash(self.content_hash)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Skill) and self.content_hash == other.content_hash

    @property
    def tokens(self) -> int:
        """The body's length in :func:`count_tokens` tokens (what the budget and the reward's length term use)."""
        return count_tokens(self.body)

    def to_skill_md(self) -> str:
        """The canonical SKILL.md text: front matter in a fixed key order, then the body verbatim."""
        return self._canonical

    @cached_property
    def _canonical(self) -> str:
        # yaml's pure-Python emitter (safe_dump), not libyaml's: the same bytes on every machine.
        import yaml

        front: dict[str, Any] = {"name": self.name, "description": self.description}
        for key, value in (("license", self.license), ("compatibility", self.compatibility),
                           ("allowed-tools", self.allowed_tools)):
            if value is not None:
                front[key] = value
        metadata = dict(self.metadata, **({"kind": self.kind} if self.kind != "text" else {}))
        if metadata:
            front["metadata"] = dict(sorted(metadata.items()))
        text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10**6)
        return f"---\n{text}---\n{self.body}"

    def files(self) -> dict[str, str]:
        """Every file of the skill folder, relative path -> text (SKILL.md, resources, the script)."""
        out = {SKILL_FILE: self.to_skill_md(), **self.resources}
        if self.script is not None:
            out[SCRIPT_PATH] = self.script
        return dict(sorted(out.items()))

    @cached_property
    def content_hash(self) -> str:
        """SHA-256 over the folder's files (paths and texts, length-prefixed): the skill's version."""
        digest = hashlib.sha256()
        for path, text in self.files().items():
            for part in (path.encode(), text.encode("utf-8", "surrogatepass")):
                digest.update(len(part).to_bytes(8, "big") + part)
        return digest.hexdigest()


def parse_skill_md(text: str, *, folder_name: str | None = None,
                   token_budget: int = DEFAULT_TOKEN_BUDGET) -> Skill:
    """Parse and validate one SKILL.md text (no resources, no script: see :func:`skill_from_files`).

    Raises :class:`SkillFormatError` on any violation of the rules in the module docstring.

    >>> parse_skill_md("---\\nname: boil-water\\ndescription: Boil water.\\n---\\n1. fill the kettle\\n").name
    'boil-water'
    """
    return _parse(text, folder_name, token_budget, resources={}, script=None)


def skill_from_files(files: Mapping[str, str], *, folder_name: str | None = None,
                     token_budget: int = DEFAULT_TOKEN_BUDGET) -> Skill:
    """A skill from its folder's files (relative path -> text): SKILL.md, resources, and for code skills
    ``scripts/skill.py``. Validates paths and sizes as well as the SKILL.md itself."""
    if not isinstance(files, Mapping) or SKILL_FILE not in files:
        got = sorted(files)[:5] if isinstance(files, Mapping) else type(files).__name__
        raise SkillFormatError(f"expected a skill folder holding {SKILL_FILE}, got {got}; add a {SKILL_FILE}")
    others = {path: text for path, text in files.items() if path != SKILL_FILE}
    _check_resources(others)
    script = others.pop(SCRIPT_PATH, None)
    skill = _parse(files[SKILL_FILE], folder_name, token_budget, resources=others, script=script)
    if skill.kind == "text" and script is not None:  # a text skill's scripts/skill.py is an ordinary resource
        skill = dataclasses.replace(skill, resources={**others, SCRIPT_PATH: script}, script=None)
    return skill


def _parse(text: Any, folder_name: str | None, token_budget: int, *, resources: dict[str, str],
           script: str | None) -> Skill:
    if not isinstance(text, str):
        raise SkillFormatError(f"expected SKILL.md as text, got {type(text).__name__}")
    if len(text) > MAX_SKILL_MD_CHARS:
        raise SkillFormatError(f"expected SKILL.md of at most {MAX_SKILL_MD_CHARS} characters, got {len(text)}; shorten it")
    front, body = _split_front_matter(text.replace("\r\n", "\n"))
    _check_keys(front)
    name = _check_name(front.get("name"), folder_name)
    description = _check_text(front.get("description"), "description", MAX_DESCRIPTION_CHARS, required=True)
    compatibility = _check_text(front.get("compatibility"), "compatibility", MAX_COMPATIBILITY_CHARS)
    license_ = _check_text(front.get("license"), "license", MAX_DESCRIPTION_CHARS)
    allowed_tools = _check_text(front.get("allowed-tools"), "allowed-tools", MAX_DESCRIPTION_CHARS)
    metadata = _check_metadata(front.get("metadata"))
    kind = _check_kind(front.get("kind"), metadata.pop("kind", None))
    if count_tokens(body) > token_budget:
        raise SkillFormatError(f"expected a body of at most {token_budget} tokens, got {count_tokens(body)} "
                               "(count_tokens: word pieces of <= 10 characters plus punctuation); shorten it "
                               "or move detail into a resource file")
    if kind == "code" and script is None:
        raise SkillFormatError(f"expected a kind: code skill to bring {SCRIPT_PATH}, got no script; add it "
                               "or make the skill kind: text")
    return Skill(name=name, description=description, body=body, license=license_, compatibility=compatibility,
                 metadata=metadata, kind=kind, resources=resources, script=script, allowed_tools=allowed_tools)


def _split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    import yaml

    if not text.startswith("---\n"):
        raise SkillFormatError(f"expected SKILL.md to start with a '---' line opening the YAML front matter, "
                               f"got {text[:40]!r}")
    end = text.find("\n---\n", 3)
    if end < 0 and text.endswith("\n---"):
        end = len(text) - 4
    if end < 0:
        raise SkillFormatError("expected a closing '---' line after the front matter, got none; add one")
    try:
        front = yaml.load(text[4:end + 1], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise SkillFormatError(f"expected valid YAML front matter, got a YAML error: {str(e)[:300]}") from None
    if not isinstance(front, dict):
        raise SkillFormatError(f"expected the front matter to be a YAML mapping, got {type(front).__name__}")
    return front, text[end + 5:]


def _check_keys(front: dict[str, Any]) -> None:
    unknown = sorted(str(k) for k in front if k not in FRONT_MATTER_KEYS)
    if unknown:
        raise SkillFormatError(f"expected front-matter keys among {list(FRONT_MATTER_KEYS)}, got {unknown[:5]}; "
                               "put extra fields under metadata")


def _check_name(name: Any, folder_name: str | None) -> str:
    if not isinstance(name, str):
        raise SkillFormatError(f"expected a name (1-64 lowercase letters, digits, hyphens), got {type(name).__name__}")
    if not 1 <= len(name) <= MAX_NAME_CHARS or not _NAME.fullmatch(name):
        raise SkillFormatError(f"expected a name of 1-{MAX_NAME_CHARS} lowercase letters, digits and single "
                               f"hyphens, no hyphen at either end, got {name[:80]!r}")
    if folder_name is not None and name != folder_name:
        raise SkillFormatError(f"expected the name to equal the folder name {folder_name!r}, got {name!r}; "
                               "rename one of them")
    return name


def _check_text(value: Any, key: str, limit: int, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        got = repr(value) if isinstance(value, str) else type(value).__name__
        raise SkillFormatError(f"expected {key} as non-empty text of 1-{limit} characters, got {got}")
    if len(value) > limit:
        raise SkillFormatError(f"expected {key} of at most {limit} characters, got {len(value)}; shorten it")
    return value


def _check_metadata(metadata: Any) -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise SkillFormatError(f"expected metadata as a map of strings to strings, got {type(metadata).__name__}")
    if len(metadata) > 64:
        raise SkillFormatError(f"expected at most 64 metadata entries, got {len(metadata)}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str) or len(key) > 64 or len(value) > 1024:
            raise SkillFormatError(f"expected metadata entries as short strings (key <= 64, value <= 1024 "
                                   f"characters), got {str(key)[:40]!r}: {type(value).__name__}; quote the value")
    return dict(metadata)


def _check_kind(top: Any, in_metadata: str | None) -> Kind:
    if top is not None and in_metadata is not None and top != in_metadata:
        raise SkillFormatError(f"expected one kind, got kind: {top!r} and metadata.kind: {in_metadata!r}")
    kind = in_metadata if in_metadata is not None else top if top is not None else "text"
    if kind not in KINDS:
        raise SkillFormatError(f"expected kind to be one of {list(KINDS)}, got {kind!r}")
    return kind


def _check_resources(files: dict[str, Any]) -> None:
    if len(files) > MAX_RESOURCES:
        raise SkillFormatError(f"expected at most {MAX_RESOURCES} resource files, got {len(files)}")
    total = 0
    for path, text in files.items():
        check_resource_path(path)
        if not isinstance(text, str):
            raise SkillFormatError(f"expected resource {path!r} as text, got {type(text).__name__}")
        if len(text) > MAX_RESOURCE_CHARS:
            raise SkillFormatError(f"expected resource {path!r} of at most {MAX_RESOURCE_CHARS} characters, got {len(text)}")
        total += len(text)
    if total > MAX_TOTAL_CHARS:
        raise SkillFormatError(f"expected resources of at most {MAX_TOTAL_CHARS} characters in all, got {total}")


def check_resource_path(path: Any) -> str:
    """``path`` if it is a safe relative resource path (``/``-separated parts of letters, digits, ``._-``,
    no ``..``, at most 4 deep), else :class:`SkillFormatError`."""
    parts = path.split("/") if isinstance(path, str) else []
    if (not parts or len(parts) > 4 or path == SKILL_FILE
            or any(p in ("", ".", "..") or not _PATH_PART.fullmatch(p) for p in parts)):
        raise SkillFormatError(f"expected a relative resource path like 'references/notes.md' (letters, digits, "
                               f"'._-', '/' between at most 4 parts, no '..'), got {str(path)[:80]!r}")
    return path
