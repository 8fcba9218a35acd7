"""Skills shown in any env: ``with_skills(env, library, retrieval=...)``, a wrapper for every protocol.

Three ways to show a :class:`~meta_envs.skills.library.SkillLibrary` to the policy, all through the reset
info's ``system_prompt`` (what :mod:`agentgym_envs.chat` makes the system message):

* ``"all"``: every skill's name, description and body, appended to the system prompt.
* ``"bm25"``: the same for the ``k`` skills whose name, description and body best match the task's
  instruction (BM25 over the library, :mod:`agentgym_envs.text_index`; skills sharing no word with the
  instruction are never shown; ties go to the name that sorts first).
* ``"index"``: only names and descriptions, and a way to read a skill on demand:

  - on a tool env (the base env has ``tools``) a real ``read_skill(name, resource="")`` tool, added to
    ``info["tools"]`` on reset and every step;
  - on a text env the action ``read_skill <name>`` (or ``read_skill <name> <resource path>``).

  **The read rule.** A read is answered by this wrapper: the observation is the skill's body (or the
  resource's text), reward 0, the episode goes on, and the base env is not stepped, so a read costs no
  step of the base env's limits (nor a turn of a protocol wrapper inside this one). The first
  ``max_reads`` (default 8) read requests of an episode are free, unknown names included (those come back
  with ``action_valid=False``); later ones are passed to the env like any action, so a policy that only
  reads still reaches the env's step limit.

Info keys this wrapper adds on reset and on every step:

* ``skills_shown`` (``list[str]``): names of the skills shown this episode (bodies for ``all``/``bm25``,
  index entries for ``index``), sorted as they appear in the prompt.
* ``skills_read`` (``list[str]``): names of the skills read so far this episode, in first-read order.

**Protocols.** Wrap either way round. ``with_skills(make(id, protocol=p), ...)`` (skills outermost) is the
one to use with ``tool_calls`` on tool envs: the protocol wrapper inside would otherwise replace
``info["tools"]`` with the base env's own. Read requests are recognised in the native action the
protocol inside parses out of the reply (``Action: read_skill x``, ``act(action="read_skill x")``,
``<tool_call>{"name": "read_skill", ...}``); anything else goes to the wrapped env untouched.
``make(id, protocol=p)`` built around ``with_skills(...)`` works too (the protocol hands native actions in).

Once a skill has been read, ``state_key`` also covers the names read so far (the same base state with
different skills read is a different state as the agent knows it). Snapshots stay on the unwrapped env; the wrapper's read counter is not in them (like ``TimeLimit``'s).

>>> import gymnasium, agentgym_envs
>>> from meta_envs.skills.skill import Skill
>>> from meta_envs.skills.library import SkillLibrary
>>> lib = SkillLibrary([Skill("explore-east", "Maze tip.", body="1. go east\\n")])
>>> env = with_skills(gymnasium.make("agentgym/Maze-Easy-v0"), lib, retrieval="index")
>>> obs, info = env.reset(seed=0)
>>> info["skills_shown"], "read_skill <name>" in info["system_prompt"]
(['explore-east'], True)
>>> obs, reward, terminated, truncated, info = env.step("read_skill explore-east")
>>> obs.splitlines()[-1], info["skills_read"], reward
('1. go east', ['explore-east'], 0.0)
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any, Literal

import gymnasium

from agentgym_envs.core.errors import InvalidAction, ResetNeeded
from agentgym_envs.core.text_env import TRUNCATION_MARKER
from agentgym_envs.core.tool_env import parse_call

from .library import SkillLibrary
from .skill import Skill

Retrieval = Literal["all", "index", "bm25"]
RETRIEVALS = ("all", "index", "bm25")
READ_ACTION = "read_skill"
READ_SKILL_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": READ_ACTION,
    "description": "Read one skill from the skill index (its full text, or one of its resource files). "
                   "Reading does not use up a step.",
    "parameters": {"type": "object", "properties": {
        "name": {"type": "string", "description": "the skill's name, as listed in the index"},
        "resource": {"type": "string", "description": "optional: a resource path the skill lists"}},
        "required": ["name"]}}}
#: Keys of the last real info that describe the episode start or the last reply, not the current state.
_NOT_CARRIED = ("instruction", "system_prompt", "thought", "native_action")
_READ_TEXT = re.compile(rf"\s*{READ_ACTION}\b\s*[\[(:]?\s*(.*?)\s*[\])]?\s*\Z", re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


class SkillsWrapper(gymnasium.Wrapper[str, str, str, str]):
    """Show ``library`` to the policy in ``env`` (see the module docstring for the modes and the read rule)."""

    def __init__(self, env: gymnasium.Env, library: SkillLibrary, retrieval: Retrieval = "all", k: int = 3, *,
                 max_reads: int = 8):
        super().__init__(env)
        if not isinstance(library, SkillLibrary):
            raise TypeError(f"expected a SkillLibrary, got {type(library).__name__}; load one with SkillLibrary.load(path)")
        if retrieval not in RETRIEVALS:
            raise ValueError(f"expected retrieval to be one of {list(RETRIEVALS)}, got {retrieval!r}")
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"expected k >= 1 skills to show for bm25, got {k!r}")
        if not isinstance(max_reads, int) or max_reads < 0:
            raise ValueError(f"expected max_reads >= 0, got {max_reads!r}")
        self.library, self.retrieval, self.k, self.max_reads = library, retrieval, k, max_reads
        self._base = env.unwrapped
        self._protocol = _inner_protocol(env)
        self._index: Any = None
        self.shown: tuple[Skill, ...] = ()
        self._read: list[str] = []
        self._requests = 0
        self._over = False
        self._last_info: dict[str, Any] | None = None

    # ----------------------------------------------------------------- what the policy sees
    @property
    def skills_read(self) -> list[str]:
        """Names of the skills read this episode, in first-read order."""
        return list(self._read)

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The base env's tools, plus ``read_skill`` in ``index`` mode on a tool env."""
        tools = getattr(self._base, "tools", None)
        if tools is None or self.retrieval != "index":
            return tools
        return [*tools, copy.deepcopy(READ_SKILL_TOOL)]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        observation, info = self.env.reset(seed=seed, options=options)
        query = str(info.get("instruction") or "") or observation
        self.shown = select_skills(self.library, self.retrieval, query, k=self.k, index=self._bm25())
        self._read, self._requests, self._over = [], 0, False
        section = render_skills(self.shown, self.retrieval, tool=self._has_tools())
        if section:
            prompt = str(info.get("system_prompt") or "")
            info["system_prompt"] = f"{prompt}\n\n{section}" if prompt else section
        self._add_info(info)
        self._last_info = info
        return observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._last_info is None:
            raise ResetNeeded("step() was called before reset(); call env.reset(seed=...) first")
        free = self.retrieval == "index" and not self._over and self._requests < self.max_reads
        request = self._read_request(action) if free else None
        if request is not None:
            self._requests += 1
            return self._answer(request)
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._over = bool(terminated or truncated)
        self._add_info(info)
        self._last_info = info
        return observation, reward, terminated, truncated, info

    # ----------------------------------------------------------------- reads
    def _read_request(self, action: Any) -> tuple[str | None, str, str] | None:
        """``(native, name, resource)`` when ``action`` asks to read a skill (``name`` may be a problem
        message's empty string), else ``None``; never raises."""
        native: Any = action
        if self._protocol is not None:
            native = self._protocol.parse(action, self._base).action
        if not isinstance(native, str) or len(native) > 4096:
            return None
        parsed = parse_read(native)
        return None if parsed is None else (native, *parsed)

    def _answer(self, request: tuple[str | None, str, str]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        native, name, resource = request
        info = {k: v for k, v in self._last_info.items() if k not in _NOT_CARRIED}  # type: ignore[union-attr]
        info["metrics"] = {}
        if self._protocol is not None:
            info["native_action"] = native
        try:
            text = read_skill_text(self.library, name, resource)
        except InvalidAction as e:
            info["action_valid"], info["parse_error"] = False, e.reason
            self._add_info(info)
            return e.reason, 0.0, False, False, info
        if name not in self._read:
            self._read.append(name)
        info["action_valid"], info["parse_error"] = True, None
        self._add_info(info)
        return _bounded(text, getattr(self._base, "max_observation_chars", 65_536)), 0.0, False, False, info

    # ----------------------------------------------------------------- helpers
    def _add_info(self, info: dict[str, Any]) -> None:
        info["skills_shown"] = [s.name for s in self.shown]
        info["skills_read"] = list(self._read)
        if self._read and isinstance(info.get("state_key"), str):  # what was read is part of what the agent knows
            material = info["state_key"] + "\x1f" + "\x1f".join(sorted(self._read))
            info["state_key"] = hashlib.blake2b(material.encode(), digest_size=12).hexdigest()
        if self._has_tools() and "tools" in info and self.retrieval == "index":
            names = {t.get("function", {}).get("name") for t in info["tools"] or [] if isinstance(t, dict)}
            if READ_ACTION not in names:
                info["tools"] = [*(info["tools"] or []), copy.deepcopy(READ_SKILL_TOOL)]

    def _has_tools(self) -> bool:
        return getattr(self._base, "tools", None) is not None

    def _bm25(self) -> Any:
        if self.retrieval != "bm25" or len(self.library) == 0:
            return None
        if self._index is None:
            from agentgym_envs.text_index import BM25Index

            self._index = BM25Index.build(_search_text(s) for s in self.library)
        return self._index


def with_skills(env: gymnasium.Env, library: SkillLibrary, retrieval: Retrieval = "all", k: int = 3, *,
                max_reads: int = 8) -> SkillsWrapper:
    """``env`` showing ``library`` to the policy by ``retrieval`` (``all``, ``index`` or ``bm25`` top-``k``);
    see the module docstring for what each shows, the ``read_skill`` rule and the info keys."""
    return SkillsWrapper(env, library, retrieval, k, max_reads=max_reads)


def select_skills(library: SkillLibrary, retrieval: Retrieval, query: str, *, k: int = 3,
                  index: Any = None) -> tuple[Skill, ...]:
    """The skills shown for a task whose instruction is ``query``: all of them (``all``, ``index``), or the
    ``k`` best by BM25 (``bm25``; ``index`` is a prebuilt :class:`~agentgym_envs.text_index.BM25Index`
    over the library in name order, built here when ``None``)."""
    skills = list(library)
    if retrieval != "bm25" or not skills:
        return tuple(skills)
    from agentgym_envs.text_index import BM25Index, top_k

    index = index if index is not None else BM25Index.build(_search_text(s) for s in skills)
    return tuple(skills[i] for i in top_k(index.scores(query), k, positive_only=True))


def render_skills(skills: tuple[Skill, ...] | list[Skill], retrieval: Retrieval, *, tool: bool = False) -> str:
    """The system-prompt section showing ``skills`` (empty when there are none): full skills for ``all``
    and ``bm25``, an index and how to read from it for ``index`` (``tool``: the base env has tools)."""
    if not skills:
        return ""
    if retrieval == "index":
        how = (f"call the {READ_ACTION} tool with the skill's name" if tool else
               f"reply with the action `{READ_ACTION} <name>` (or `{READ_ACTION} <name> <resource>`)")
        lines = [f"- {s.name}: {s.description}" for s in skills]
        return ("## Skills\nSkills you can read before acting; to read one, " + how
                + ". Reading does not use up a step.\n" + "\n".join(lines))
    parts = [f"### {s.name}\n{s.description}\n\n{s.body.strip()}".rstrip() for s in skills]
    return "## Skills\nUse these skills where they fit the task.\n\n" + "\n\n".join(parts)


def parse_read(native: str) -> tuple[str, str] | None:
    """``(name, resource)`` when the native action ``native`` is a read request, else ``None``.

    Text form ``read_skill <name> [<resource>]`` (brackets or a colon allowed); call forms
    ``read_skill(name="x", resource="y")`` and ``{"name": "read_skill", "arguments": {...}}``.
    A malformed request gives ``("", "")`` (answered as an unknown skill).

    >>> parse_read("read_skill heat-then-place"), parse_read('read_skill(name="a", resource="b.md")')
    (('heat-then-place', ''), ('a', 'b.md'))
    >>> parse_read("go north") is None
    True
    """
    text = native.strip()
    if text.startswith("{"):
        return _json_read(text)
    if not text.startswith(READ_ACTION):
        return None
    if text[len(READ_ACTION):].lstrip().startswith("("):
        try:
            _, args, kwargs = parse_call(text)
        except InvalidAction:
            return "", ""
        return _call_args(args, kwargs)
    match = _READ_TEXT.fullmatch(text)
    if match is None:
        return None
    words = _WORD.findall(match.group(1))
    return (words[0] if words else "", words[1] if len(words) > 1 else "")


def read_skill_text(library: SkillLibrary, name: str, resource: str = "") -> str:
    """What a read returns: the skill (header, body, its resource list) or one resource's text;
    :class:`~agentgym_envs.core.errors.InvalidAction` naming the choices when there is no such thing."""
    if name not in library:
        listed = ", ".join(library.names()[:20]) or "none"
        raise InvalidAction(f"No skill named {name[:80]!r}. Skills in the index: {listed}. Read one with {READ_ACTION} <name>.")
    skill = library.get(name)
    if resource:
        if resource not in skill.resources:
            listed = ", ".join(skill.resources) or "none"
            raise InvalidAction(f"Skill {name!r} has no resource {resource[:80]!r}; its resources: {listed}.")
        return skill.resources[resource]
    extra = f"\n\nResources (read with {READ_ACTION} {name} <path>): " + ", ".join(skill.resources) if skill.resources else ""
    return f"# Skill {skill.name}\n{skill.description}\n\n{skill.body.strip()}{extra}"


def _json_read(text: str) -> tuple[str, str] | None:
    try:
        call = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(call, dict) or call.get("name") != READ_ACTION:
        return None
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return "", ""
    return _call_args([], arguments) if isinstance(arguments, dict) else ("", "")


def _call_args(args: list[Any], kwargs: dict[str, Any]) -> tuple[str, str]:
    values = {"name": args[0] if args else kwargs.get("name", ""),
              "resource": args[1] if len(args) > 1 else kwargs.get("resource", "")}
    name, resource = values["name"], values["resource"] or ""
    if not isinstance(name, str) or not isinstance(resource, str):
        return "", ""
    return name.strip(), resource.strip()


def _search_text(skill: Skill) -> str:
    return f"{skill.name.replace('-', ' ')} {skill.description} {skill.body}"


def _inner_protocol(env: gymnasium.Env) -> Any:
    """The action protocol of the nearest ``ActionProtocolWrapper`` inside ``env``, if any."""
    from agentgym_envs.protocols import ActionProtocolWrapper

    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env, ActionProtocolWrapper):
            return env.protocol
        env = env.env
    return None


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    marker = TRUNCATION_MARKER.format(n=len(text) - limit)
    return text[: limit - len(marker)] + marker
