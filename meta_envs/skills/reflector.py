"""The scripted reflector: distils the expert's successful trajectories into procedure skills.

It writes the grammar of :mod:`~meta_envs.skills.actor` and generalises what it saw, so that its skills
carry over to held-out tasks instead of replaying one instance:

* the instruction becomes a ``Task:`` pattern with the task's slots as placeholders (the goal object and
  receptacle in the household, the description before the price clause in a shop, the named entity of
  a question);
* instance names lose their numbers (``microwave 1`` → ``microwave``), the walk to where the object lay
  becomes a search loop, a walk to a place that varies (a lamp's table) a loop until the next step is
  possible;
* shop product ids become ``{item:id}``, option clicks a loop over ``{option:task}`` values;
* in search, each query is rewritten with the values known so far (the question's entity, facts noted
  earlier), and the sentence of the passage that held the next value becomes a ``note`` pattern.

Trajectories of one procedure (the same steps) are merged into one procedure with every instruction
pattern seen, and the procedures go into one skill (the actor picks the one whose pattern matches). Episodes the generalisers do not recognise give no skill (never an instance-bound one).
:func:`distil_action` is the meta-env's ``expert_action``; :class:`ScriptedReflector` does the same from
the brief's text, as a policy would.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Sequence

from .skill import Skill
from .utility import Episode

FIND = "repeat open {place} or go to {place} until you can take {obj} from {place}"
FIND_ANOTHER = "repeat open {spot} or go to {spot} until you can take {obj} from {source:other}"
_TRANSFORMS = ("heat", "cool", "clean", "slice")
_NAME = re.compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")
_TAG = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
_SHOWN_OBSERVATION_CHARS = 600
_SHOWN_STEPS = 30


def _kind(name: str) -> str:
    return re.sub(r" \d+$", "", name.strip())


def _slot(text: str, value: str, placeholder: str) -> str:
    return re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", placeholder, text)


def household_procedure(ep: Episode) -> tuple[str, list[str]] | None:
    """``(Task pattern, steps)`` of a household expert trajectory, or ``None`` if it is not one."""
    actions = [a.strip() for a in ep.actions]
    take = next((a for a in actions if a.startswith("take ")), None)
    last = next((a for a in reversed(actions) if a.startswith(("put ", "use "))), None)
    if take is None or last is None:
        return None
    obj = _kind(take[5:].split(" from ")[0])
    target = _kind(last.split(" in/on ")[-1] if last.startswith("put ") else last[4:])
    pattern = _slot(_slot(ep.instruction, obj, "{obj}"), target, "{target}")
    if "{obj}" not in pattern or "{target}" not in pattern:
        return None
    steps: list[str] = []
    takes = 0
    for k, action in enumerate(actions):
        after = actions[k + 1:]
        step = _household_step(action, after, obj, target, takes)
        takes += action.startswith("take ")
        steps += step
    return pattern, steps


def _household_step(action: str, after: list[str], obj: str, target: str, takes: int) -> list[str]:
    verb, _, rest = action.partition(" ")
    nxt = after[0] if after else ""
    if verb == "go":
        place = rest.removeprefix("to ")
        if nxt.startswith("take ") or (nxt == f"open {place}" and len(after) > 1 and after[1].startswith("take ")):
            return []  # the search loop before the take walks there
        if _kind(place) == target:
            return ["go to {target}", "open {target} if possible"]
        if nxt.startswith("use "):
            return ["repeat go to {spot} until you can use {target}"]
        return [f"go to {_kind(place)}"]
    if verb == "open":
        if nxt.startswith("take ") or _kind(rest) == target:
            return []  # the search loop opens it, or the step after "go to {target}" does
        return [f"open {_kind(rest)} if possible"]
    if verb == "take":
        return [FIND, "take {obj} from {place}"] if takes == 0 else [FIND_ANOTHER, "take {obj} from {source:other}"]
    if verb == "put":
        return ["put {obj} in/on {target}"]
    if verb in _TRANSFORMS:
        return [f"{verb} {{obj}} with {_kind(rest.split(' with ')[-1])}"]
    if verb == "use":
        return ["use {target}" if _kind(rest) == target else f"use {_kind(rest)}"]
    return []  # look, inventory, examine: nothing a procedure needs


def webshop_procedure(ep: Episode) -> tuple[str, list[str]] | None:
    """``(Task pattern, steps)`` of a shop trajectory (``search[...]`` / ``click[...]``), or ``None``."""
    actions = [a.strip() for a in ep.actions]
    if not actions or not actions[0].startswith("search[") or not actions[-1].lower() == "click[buy now]":
        return None
    query, instruction = actions[0][7:-1], ep.instruction.strip()
    if instruction.lower().startswith(query.lower()) and query:
        rest, numbers = instruction[len(query):], iter(range(1, 100))
        pattern = "{need}" + re.sub(r"\d+(?:\.\d+)?", lambda m: f"{{n{next(numbers)}:number}}", rest)
    else:
        pattern = "{need}"
    steps = ["search[{need}]"]
    for action in actions[1:]:
        value = action[6:-1] if action.startswith("click[") and action.endswith("]") else None
        if value is None:
            return None
        if re.fullmatch(r"(?=[a-z0-9]*\d)[a-z0-9]{6,}", value):
            steps.append("click[{item:id}]")
        elif value.lower() in instruction.lower() and value.lower() != "buy now":
            if steps[-1] != "repeat click[{option:task}]":
                steps.append("repeat click[{option:task}]")
        else:
            steps.append(action)
    return pattern, steps


def search_procedure(ep: Episode) -> tuple[str, list[str]] | None:
    """``(Task pattern, steps)`` of a search trajectory (``<search>`` … ``<answer>``), or ``None``."""
    tags = [_TAG.search(re.sub(r"<think>.*?</think>", "", a, flags=re.DOTALL)) for a in ep.actions]
    if not tags or any(t is None for t in tags) or tags[-1].group(1).lower() != "answer":
        return None
    queries = [t.group(2).strip() for t in tags[:-1]]
    answer = tags[-1].group(2).strip()
    entity = _entity(queries[0], ep.instruction) if queries else None
    if entity is None:
        return None
    known = {entity: "x"}
    steps: list[str] = []
    for k, query in enumerate(queries):
        steps.append(f"<search>{_with_known(query, known)}</search>")
        value = answer if k == len(queries) - 1 else _next_value(queries[k + 1], known, ep.observations[k + 1])
        sentence = _sentence_with(ep.observations[k + 1], value, known) if value else None
        if sentence is None:
            return None
        name = f"a{k + 1}"
        kind = "number" if value.isdigit() else "Name"
        steps.append(f"note {{{name}}} from: {_with_known(sentence, {**known, value: f'{name}:{kind}'})}")
        known[value] = name
    steps.append(f"<answer>{{a{len(queries)}}}</answer>")
    return _slot(ep.instruction, entity, "{x}"), steps


def _entity(query: str, question: str) -> str | None:
    """The longest word prefix of ``query`` written in ``question`` (the thing the question is about)."""
    words = query.split()
    for end in range(len(words), 0, -1):
        prefix = " ".join(words[:end])
        if prefix[:1].isupper() and words[end - 1][:1].isupper() and re.search(rf"(?<![\w-]){re.escape(prefix)}(?![\w-])", question):
            return prefix
    return None


def _with_known(text: str, known: dict[str, str]) -> str:
    for value in sorted(known, key=len, reverse=True):
        text = _slot(text, value, "{" + known[value] + "}")
    return text


def _next_value(next_query: str, known: dict[str, str], observation: str) -> str | None:
    fresh = [n for n in _NAME.findall(next_query) if n not in known and n in observation]
    return max(fresh, key=len, default=None)


def _sentence_with(observation: str, value: str, known: dict[str, str]) -> str | None:
    """The shortest span of a passage sentence from a known value to ``value`` (either order): the words
    that state the fact, without the sentence's other, phrasing-specific words."""
    for sentence in re.split(r"(?<=\.)\s+|\n", observation):
        sentence = re.sub(r"^(?:<information>)?Doc \d+\(Title: [^)]*\)\s*", "", sentence).strip().rstrip(".")
        at = sentence.find(value)
        spans = [(sentence.find(k), len(k)) for k in known if k != value and k in sentence]
        if at >= 0 and spans:
            start, length = min(spans, key=lambda s: abs(s[0] - at))
            return sentence[min(start, at):max(start + length, at + len(value))]
    for sentence in re.split(r"(?<=\.)\s+|\n", observation):  # a pronoun instead of the name: the words before
        before, found, _ = sentence.partition(value)
        words = before.split()
        if found and len(words) >= 2 and not words[-1].endswith(")"):
            return " ".join(words[-3:]) + " " + value
    return None


GENERALISERS: tuple[Callable[[Episode], tuple[str, list[str]] | None], ...] = (
    household_procedure, webshop_procedure, search_procedure,
)


def distil(episodes: Sequence[Episode]) -> list[tuple[list[str], list[str]]]:
    """``(patterns, steps)`` of each distinct procedure in the successful ``episodes``, in first-seen order.

    Trajectories whose steps agree but for the wording of their ``note`` patterns (a fact stated in
    another phrasing) are one procedure with every wording as consecutive notes; procedures with the same
    steps keep every instruction pattern seen."""
    grouped: dict[tuple[str, ...], tuple[list[str], list[list[str]]]] = {}
    for ep in episodes:
        if not ep.won:
            continue
        found = next((p for p in (g(ep) for g in GENERALISERS) if p is not None), None)
        if found is None or not found[1]:
            continue
        pattern, steps = found
        shape = tuple(_note_shape(s) for s in steps)
        patterns, variants = grouped.setdefault(shape, ([], [[] for _ in steps]))
        if pattern not in patterns:
            patterns.append(pattern)
        for options, step in zip(variants, steps):
            if step not in options:
                options.append(step)
    return [(patterns, [s for options in variants for s in options]) for patterns, variants in grouped.values()]


def _note_shape(step: str) -> str:
    """A step with a note's wording left out (``note {a1}``), so that wordings of one fact group together."""
    return step.split(" from: ", 1)[0] if step.startswith("note ") else step


def distilled_skill(episodes: Sequence[Episode]) -> Skill | None:
    """One skill holding every procedure distilled from ``episodes`` (``None`` when there is none); its
    name carries a hash of its body, so the same distillation is the same skill."""
    procedures = distil(episodes)
    if not procedures:
        return None
    blocks = ["\n".join([f"Task: {p}" for p in patterns] + [f"{i}. {s}" for i, s in enumerate(steps, 1)])
              for patterns, steps in procedures]
    body = "# Distilled procedures\n\n" + "\n\n".join(blocks) + "\n"
    patterns = [p for ps, _ in procedures for p in ps]
    digest = hashlib.sha256(body.encode()).hexdigest()[:10]
    description = (f"Procedures distilled from {len(episodes)} expert trajectories, for tasks like: "
                   + "; ".join(patterns[:3]))[:1024]
    return Skill(name=f"distilled-{digest}", description=description, body=body)


def distil_action(episodes: Sequence[Episode], names: Collection[str] | object = ()) -> str:
    """The next operation: ``ADD`` the distilled skill unless a skill of its name (the same distillation)
    is in the library (``names``: the library or its skill names), else ``DONE``."""
    skill = distilled_skill(episodes)
    have = {getattr(s, "name", s) for s in names} if names else set()
    return "ADD\n" + skill.to_skill_md() if skill is not None and skill.name not in have else "DONE"


def render_trajectory(number: int, who: str, ep: Episode) -> str:
    """One trajectory as the brief shows it (and :func:`parse_trajectories` reads it back)."""
    outcome = "success" if ep.won else "failure"
    lines = [f"### Trajectory {number}: {who}, task {ep.task_index}, {outcome} (return {ep.ret:.2f})",
             f"Instruction: {ep.instruction}"]
    observations = list(ep.observations) or [""]
    lines += _indented(observations[0])
    for action, observation in list(zip(ep.actions, observations[1:] or [""] * len(ep.actions)))[:_SHOWN_STEPS]:
        lines.append("> " + action.replace("\n", "\n> "))
        lines += _indented(observation)
    return "\n".join(lines)


def _indented(text: str) -> list[str]:
    return ["  " + line for line in text[:_SHOWN_OBSERVATION_CHARS].splitlines()]


_HEADER = re.compile(r"^### Trajectory \d+: (\w+), task (-?\d+), (success|failure) \(return (-?[\d.]+)\)$")


def parse_trajectories(text: str) -> list[tuple[str, Episode]]:
    """The ``(who, episode)`` pairs :func:`render_trajectory` wrote into ``text`` (observations as shown)."""
    found: list[tuple[str, Episode]] = []
    for block in re.split(r"\n(?=### Trajectory )", text):
        lines = block.strip("\n").splitlines()
        header = _HEADER.match(lines[0]) if lines else None
        if header is None or len(lines) < 2 or not lines[1].startswith("Instruction: "):
            continue
        actions, observations, current = [], [], []
        for line in lines[2:]:
            if line.startswith("> ") and (not actions or current or not actions[-1]):
                observations.append("\n".join(current))
                actions.append(line[2:])
                current = []
            elif line.startswith("> "):
                actions[-1] += "\n" + line[2:]
            else:
                current.append(line[2:])
        observations.append("\n".join(current))
        ep = Episode(int(header.group(2)), int(header.group(2)), float(header.group(4)), header.group(3) == "success",
                     len(actions), tuple(actions), lines[1][len("Instruction: "):], tuple(observations))
        found.append((header.group(1), ep))
    return found


class ScriptedReflector:
    """The scripted reflector as a text policy: reads the brief (and later observations' library index)
    and answers with :func:`distil_action`."""

    name = "scripted-reflector"

    def __init__(self) -> None:
        self._episodes: list[Episode] = []

    def act(self, observation: str) -> str:
        trajectories = parse_trajectories(observation)
        if trajectories:
            self._episodes = [ep for who, ep in trajectories if who == "expert"]
        names = re.findall(r"^- ([a-z0-9-]+): ", observation.split("## Trajectories")[0], flags=re.MULTILINE)
        return distil_action(self._episodes, names)
