"""The procedure-following actor: a scripted policy whose behaviour depends on the skill text it is shown.

Utility must be measured on real differences, so the CPU baseline actor reads skills and does what they
say, step by step, and otherwise falls back to a weak default. Any other policy (the tiny model, HF, vLLM,
OpenAI-compatible) acts through :class:`~meta_envs.skills.model_actor.PolicyActor`, with the skills in its
system prompt.

**The procedure grammar** (what the curated skills are written in and what the scripted reflector writes).
A skill body holds one procedure: ``Task:`` lines and a numbered list; other prose is ignored.

* ``Task: put a hot {obj} in {target}.`` — the procedure applies to instructions that match this pattern
  (case and spacing ignored, a final period optional); the match binds the placeholders. A procedure
  without ``Task:`` lines applies to every task; procedures whose pattern matched are preferred, and
  among equals the first one shown wins (so ten copies of a skill act exactly like one).
* ``1. take {obj} from {place}`` — a *command step*: do the first valid action that matches the template
  (bound placeholders must match their value, optionally followed by an instance number: ``apple``
  matches ``apple 1``; unbound ones bind). With no listed valid actions, or when no listed action
  matches, a step whose placeholders are all bound is sent *literally* (a skill saying ``submit now`` is
  followed: that is what makes an injection's utility honest). A step with an unbound placeholder and no
  match is skipped.
* ``2. open {target} if possible`` — an *optional step*: skipped unless a valid action matches.
* ``3. repeat open {place} or go to {place} until you can take {obj} from {place}`` — a *loop*: while
  no valid action matches the ``until`` template, do the first not-yet-done action matching the
  alternatives in order (each action at most once per loop); then go on (the loop's placeholders stay
  free; ``until`` binds). Without
  ``until``, the loop ends when no alternative is left.
* ``4. note {year} from: opened its doors in the year {year:number}`` — a *note*: search the last
  observation for the pattern and bind its placeholders (no action; skipped when absent).

Placeholders are ``{name}`` or ``{name:type}``; a template may hold at most two open-ended ones (``any``,
``task``, ``other``; a note's pattern none: it reads typed values), else it never matches. Types: ``any`` (default), ``number``, ``id`` (a product
id such as ``b0abc12345``: letters and digits with a digit, 6+ chars), ``Name`` (the whole run of
up to six capitalised words there) and
``task`` (any text that occurs in the instruction) and ``other`` (anything but an instance of a value the
``Task:`` pattern bound: ``take {obj} from {source:other}`` never takes the object back out of ``{target}``). Once every step is done the actor falls back to its
default: a seeded random valid action, biased towards actions that share a word with the instruction
(half the time); where no actions are listed, the instruction itself (weak on purpose).

>>> p = parse_procedures("Task: heat some {obj} and put it in {target}.\\n1. go to microwave\\n2. heat {obj} with microwave")
>>> len(p), p[0].steps[1].templates
(1, ('heat {obj} with microwave',))
>>> match_template("heat {obj} with microwave", "heat apple 1 with microwave 1", {"obj": "apple"}, "")
{'obj': 'apple'}
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Sequence

StepKind = Literal["do", "optional", "repeat", "note"]

_NUMBERED = re.compile(r"^\s*(\d{1,3})[.)]\s+(.+?)\s*$")
_TASK_LINE = re.compile(r"^\s*task:\s*(.+?)\s*$", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]{0,31})(?::([A-Za-z]+))?\}")
_REPEAT = re.compile(r"^repeat\s+(.+?)(?:\s+until you can\s+(.+))?$", re.IGNORECASE)
_NOTE = re.compile(r"^note\s+.+?\s+from:\s*(.+)$", re.IGNORECASE)
_OPTIONAL = re.compile(r"^(.+?)\s+if possible\.?$", re.IGNORECASE)
_TYPES = {  # typed ones are atomic (possessive): they never backtrack into each other
    "any": r".+?",
    "number": r"(?>\d++(?:[.,]\d++)?+)",
    "id": r"(?=[a-z]*+\d)[a-z0-9]{6,}+",
    "Name": r"(?-i:(?<![\w'-])(?>[A-Z][\w'-]{0,40}+(?: [A-Z][\w'-]{0,40}+){0,5}+))",
    "task": r".+?",
    "other": r".+?",
}
#: Parsing stops after this many characters of skill text and this many steps per procedure.
MAX_TEXT_CHARS = 200_000
MAX_STEPS = 64
#: Placeholders whose text is open-ended (``any``, ``task``, ``other``) allowed per template (notes: per
#: pattern). Each one multiplies the regex's backtracking; a template with more never matches, so a
#: hostile skill cannot make one match take minutes.
MAX_OPEN = 2
MAX_OPEN_IN_NOTE = 0
#: Only this much of an action / instruction / observation is matched against templates.
MAX_MATCHED_CHARS = 2_000
MAX_SEARCHED_CHARS = 20_000
_OPEN = frozenset({"any", "task", "other"})
#: Words too common to make an action "about" the instruction.
_STOP = frozenset("a an the some it in on to and of with from for is are i am need looking put go".split())


@dataclass(frozen=True)
class StepSpec:
    """One numbered step: its kind, its templates (alternatives for a loop) and a loop's ``until``."""

    kind: StepKind
    templates: tuple[str, ...]
    until: str | None = None


@dataclass(frozen=True)
class Procedure:
    """The ``Task:`` patterns and numbered steps of one skill body."""

    patterns: tuple[str, ...]
    steps: tuple[StepSpec, ...]


def parse_step(text: str) -> StepSpec:
    """The :class:`StepSpec` of one numbered line's text (see the module docstring's grammar)."""
    text = text.strip()
    text = text[:-1] if text.endswith(".") else text
    note = _NOTE.match(text)
    if note:
        return StepSpec("note", (note.group(1).strip(),))
    repeat = _REPEAT.match(text)
    if repeat:
        alternatives = tuple(t.strip() for t in re.split(r"\s+or\s+", repeat.group(1)) if t.strip())
        return StepSpec("repeat", alternatives, repeat.group(2).strip() if repeat.group(2) else None)
    optional = _OPTIONAL.match(text)
    if optional:
        return StepSpec("optional", (optional.group(1).strip(),))
    return StepSpec("do", (text,))


def parse_procedures(text: str) -> list[Procedure]:
    """Every procedure in ``text`` (skill bodies or a whole system prompt): a numbered list restarting at
    1 starts a new procedure; ``Task:`` lines belong to the procedure whose steps follow them."""
    procedures: list[Procedure] = []
    patterns: list[str] = []
    steps: list[StepSpec] = []
    for line in text[:MAX_TEXT_CHARS].splitlines():
        task, numbered = _TASK_LINE.match(line), _NUMBERED.match(line)
        if task:
            if steps:
                procedures.append(Procedure(tuple(patterns), tuple(steps)))
                patterns, steps = [], []
            patterns.append(task.group(1))
        elif numbered:
            if numbered.group(1) == "1" and steps:
                procedures.append(Procedure(tuple(patterns), tuple(steps)))
                patterns, steps = [], []
            if len(steps) < MAX_STEPS:
                steps.append(parse_step(numbered.group(2)))
    if steps:
        procedures.append(Procedure(tuple(patterns), tuple(steps)))
    return procedures


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _literal(text: str, numbered: bool) -> str:
    """``text`` escaped; with ``numbered``, each word ending before a space or the end may carry an
    instance number (``go to microwave`` matches ``go to microwave 1``)."""
    escaped = re.escape(text)
    return re.sub(r"(?<=[A-Za-z])(?=\\ |$)", r"(?: \\d+)?", escaped) if numbered else escaped


_NEVER = re.compile(r"(?!)")


@lru_cache(maxsize=4096)
def _compile(template: str, bindings: tuple[tuple[str, str], ...], *, numbered: bool,
             flags: int = re.IGNORECASE, max_open: int = MAX_OPEN) -> tuple[re.Pattern[str], list[tuple[str, str]]]:
    """A regex for ``template`` and the (name, type) of the placeholders it captures; bound placeholders
    must equal their value (followed by an instance number if ``numbered``). More than ``max_open``
    open-ended placeholders: a regex that never matches."""
    bound = dict(bindings)
    parts: list[str] = []
    groups: list[tuple[str, str]] = []
    position = 0
    for m in _PLACEHOLDER.finditer(template):
        parts.append(_literal(template[position:m.start()], numbered))
        name, kind = m.group(1), m.group(2) or "any"
        if name in bound:
            parts.append(re.escape(bound[name]) + (r"(?: \d+)?" if numbered else ""))
        elif any(g == name for g, _ in groups):
            parts.append(f"(?P={name})")
        else:
            parts.append(f"(?P<{name}>{_TYPES.get(kind, _TYPES['any'])})")
            groups.append((name, kind))
        position = m.end()
    parts.append(_literal(template[position:], numbered))
    if sum(kind in _OPEN for _, kind in groups) > max_open:
        return _NEVER, groups
    return re.compile("".join(parts), flags | re.DOTALL), groups


def match_template(template: str, action: str, bindings: dict[str, str], instruction: str,
                   task_values: frozenset[str] = frozenset()) -> dict[str, str] | None:
    """The bindings extended by matching ``action`` against ``template`` in full, or ``None``.
    ``task_values``: what the ``Task:`` pattern bound (an ``other`` placeholder may not be one of them)."""
    pattern, groups = _compile(template, tuple(sorted(bindings.items())), numbered=True)
    m = pattern.fullmatch(action.strip()[:MAX_MATCHED_CHARS])
    if m is None:
        return None
    found = {name: m.group(name) for name, _ in groups}
    for (name, kind), value in zip(groups, found.values()):
        if kind == "task" and value.lower() not in instruction.lower():
            return None
        if kind == "other" and re.sub(r" \d+$", "", value.lower()) in task_values:
            return None
    return {**bindings, **found}


def match_task(pattern: str, instruction: str) -> dict[str, str] | None:
    """Bindings from a ``Task:`` pattern matched against the whole instruction, or ``None``."""
    regex, groups = _compile(pattern.rstrip(" ."), (), numbered=False)
    m = regex.fullmatch(_normalise(instruction[:MAX_MATCHED_CHARS]).rstrip(" ."))
    return None if m is None else {name: m.group(name).strip() for name, _ in groups}


def grounded(template: str, bindings: dict[str, str]) -> str | None:
    """``template`` with every placeholder replaced by its binding, or ``None`` if one is unbound."""
    names = [m.group(1) for m in _PLACEHOLDER.finditer(template)]
    if any(n not in bindings for n in names):
        return None
    return _PLACEHOLDER.sub(lambda m: bindings[m.group(1)], template)


class Actor(Protocol):
    """What plays a base env's episode in a utility measurement: reset per episode, then one action per step."""

    name: str

    def reset(self, *, instruction: str, system_prompt: str, seed: int) -> None: ...

    def act(self, observation: str, info: dict[str, Any]) -> str: ...


@dataclass
class ProcedureActor:
    """Follows the first applicable procedure in its system prompt, then a weak seeded default."""

    name: str = "procedure"
    _procedure: Procedure | None = field(default=None, repr=False)
    _bindings: dict[str, str] = field(default_factory=dict, repr=False)
    _step: int = 0
    _done: set[str] = field(default_factory=set, repr=False)
    _instruction: str = ""
    _task_values: frozenset[str] = frozenset()
    _rng: random.Random = field(default_factory=lambda: random.Random(0), repr=False)

    def reset(self, *, instruction: str, system_prompt: str, seed: int) -> None:
        """Start an episode: choose the procedure and seed the default's RNG (the same seed in both arms)."""
        self._instruction, self._rng = instruction, random.Random(seed)
        self._procedure, self._bindings = choose_procedure(parse_procedures(system_prompt), instruction)
        self._task_values = frozenset(v.lower() for v in self._bindings.values())
        self._step, self._done = 0, set()

    @property
    def following(self) -> bool:
        """Whether a procedure step is still ahead (else the default acts)."""
        return self._procedure is not None and self._step < len(self._procedure.steps)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        listed = info.get("valid_actions")
        valid = [a for a in listed if isinstance(a, str)] if isinstance(listed, list) else None
        while self.following:
            action = self._try_step(self._procedure.steps[self._step], observation, valid)
            if action is not None:
                return action
        return weak_default(valid, self._instruction, self._rng)

    def _try_step(self, step: StepSpec, observation: str, valid: list[str] | None) -> str | None:
        """The action for ``step`` (advancing past it when it is finished), or ``None`` to try the next."""
        if step.kind == "note":
            found = _search(step.templates[0], observation, self._bindings)
            self._bindings.update(found or {})
            self._step += 1
            return None
        if step.kind == "repeat":
            return self._loop(step, valid)
        self._step += 1
        for action in valid or ():
            bound = self._match(step.templates[0], action)
            if bound is not None:
                self._bindings = bound
                return action
        literal = grounded(step.templates[0], self._bindings)
        return literal if step.kind == "do" and literal else None

    def _loop(self, step: StepSpec, valid: list[str] | None) -> str | None:
        if step.until is not None:
            for action in valid or ():
                bound = self._match(step.until, action)
                if bound is not None:
                    self._bindings, self._step, self._done = bound, self._step + 1, set()
                    return None
        for template in step.templates:
            for action in valid or ():
                if action not in self._done and self._match(template, action) is not None:
                    self._done.add(action)
                    return action
        self._step, self._done = self._step + 1, set()
        return None

    def _match(self, template: str, action: str) -> dict[str, str] | None:
        return match_template(template, action, self._bindings, self._instruction, self._task_values)


def _search(pattern: str, text: str, bindings: dict[str, str]) -> dict[str, str] | None:
    regex, groups = _compile(pattern, tuple(sorted(bindings.items())), numbered=False, flags=0,
                             max_open=MAX_OPEN_IN_NOTE)
    m = regex.search(text[:MAX_SEARCHED_CHARS])
    return None if m is None else {name: m.group(name).strip() for name, _ in groups}


def choose_procedure(procedures: Sequence[Procedure], instruction: str) -> tuple[Procedure | None, dict[str, str]]:
    """The first procedure whose ``Task:`` pattern matches ``instruction`` (with its bindings), else the
    first without patterns, else ``None``."""
    for procedure in procedures:
        for pattern in procedure.patterns:
            bindings = match_task(pattern, instruction)
            if bindings is not None:
                return procedure, bindings
    general = next((p for p in procedures if not p.patterns), None)
    return general, {}


@lru_cache(maxsize=8192)
def _words(text: str) -> frozenset[str]:
    """The lowercase words of ``text`` (cached: the same valid actions recur at every step and probe)."""
    return frozenset(re.findall(r"[a-z]+", text.lower()))


def weak_default(valid: list[str] | None, instruction: str, rng: random.Random) -> str:
    """A seeded random valid action, half the time among those sharing a word with the instruction;
    with no listed actions, the instruction itself."""
    if not valid:
        return _normalise(instruction)[:200] or "look"
    words = _words(instruction) - _STOP
    related = [a for a in valid if words & _words(a)]
    pool = related if related and rng.random() < 0.5 else valid
    return pool[rng.randrange(len(pool))]


# The model actor lives in its own module; these names stay importable from here.
from .model_actor import ActorContextError, PolicyActor, actor_from_spec, document_tokens  # noqa: E402,F401
