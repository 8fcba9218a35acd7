"""The rule-based interpreter: a tutor's free text → the same moves as the tool calls.

The text is lower-cased and read by these rules, first match wins:

====  ==========================================================  =====================================
rule  when the text…                                              move
====  ==========================================================  =====================================
1     says goodbye or ends the session ("bye", "end the           ``end_session``
      session", "that's all for today", "we're done", "see you")
2     asks the student to do a problem ("try this", "solve",       ``ask_item(component)``
      "work out", "another problem", "next question", "have a
      go", "your turn")
3     is a question (has "?") and addresses a misconception        ``probe(misconception)``
4     addresses a misconception (a statement)                      ``explain(component)``, targeted
5     is a question that names a component                         ``hint(component)``
6     names a component                                            ``explain(component)``, untargeted
7     anything else                                                ``talk`` about the current component
====  ==========================================================  =====================================

*Addresses a misconception*: the text contains one of its cue phrases (the catalogue's ``cues``, e.g.
"add the denominators" for ``add_across``), its id, or its name. *Names a component*: contains one of its
keywords ("common denominator", "decimal", "order of operations", …), its id or its name; the component
with most hits wins, ties going to the current component. The *current component* is the one of the
latest item asked (or the session's first component). A misconception a text addresses also fixes the
component. Tool-call text (``hint(...)``, JSON calls) never reaches this interpreter; its arguments are
read the same way (a hint's or explanation's text is targeted when it addresses a misconception).
"""

from __future__ import annotations

import re

from .domain import COMPONENTS, MISCONCEPTIONS
from .moves import Move

_END = re.compile(r"\b(?:good ?bye|bye|end (?:the |our |this )?session|that'?s all for today|we'?re done|see you)\b")
_ASK = re.compile(
    r"\b(?:try (?:this|that|another|one|a)|solve|work out|(?:another|a new|new|next) (?:problem|question|item|one)"
    r"|have a go|your turn)\b"
)

def _phrases(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """Whole-word matcher of any of ``phrases`` ("gap" must not match "singapore")."""
    return re.compile(r"\b(?:" + "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True)) + r")\b")


#: Matchers of the phrases naming each misconception and each component (cues, ids, names, keywords).
_MISCONCEPTION_PHRASES: dict[str, re.Pattern[str]] = {
    m.id: _phrases((*m.cues, m.id, m.name.lower())) for m in MISCONCEPTIONS.values()
}
_COMPONENT_PHRASES: dict[str, re.Pattern[str]] = {
    c.id: _phrases((*c.keywords, c.id, c.name.lower())) for c in COMPONENTS.values()
}


def addressed_misconceptions(text: str, component: str | None = None) -> tuple[str, ...]:
    """Misconceptions (of ``component`` when given) that ``text`` addresses, in catalogue order."""
    lowered = text.lower()
    candidates = COMPONENTS[component].misconceptions if component else tuple(MISCONCEPTIONS)
    return tuple(m for m in candidates if _MISCONCEPTION_PHRASES[m].search(lowered))


def named_component(text: str, current: str | None) -> str | None:
    """The component ``text`` names most often (ties to ``current``), or ``None`` when it names none."""
    lowered = text.lower()
    hits = {c: len(pattern.findall(lowered)) for c, pattern in _COMPONENT_PHRASES.items()}
    best = max(hits.values())
    if best == 0:
        return None
    if current is not None and hits.get(current) == best:
        return current
    return next(c for c, n in hits.items() if n == best)


def interpret(text: str, current: str | None) -> Move:
    """The move a free-text tutor turn makes (see the rule table in the module docstring)."""
    lowered = text.lower()
    if _END.search(lowered):
        return Move("end_session", text=text, via="text")
    addressed = addressed_misconceptions(lowered)
    named = named_component(lowered, current)
    component = MISCONCEPTIONS[addressed[0]].component if addressed else named
    if _ASK.search(lowered):
        return Move("ask_item", component or current, text=text, via="text")
    question = "?" in lowered
    if addressed and question:
        return Move("probe", component, addressed[0], text=text, addressed=addressed, via="text")
    if addressed:
        return Move("explain", component, text=text, addressed=addressed, via="text")
    if named is not None:
        return Move("hint" if question else "explain", named, text=text, via="text")
    return Move("talk", current, text=text, via="text")
