"""Pure Twenty Questions rules: matching questions to attributes, the deterministic answerer, the solver.

**Keyword rule.** A question is lower-cased and split into words (letters, digits and hyphens). Each
attribute's keyword phrases are looked for as whole-word sequences; every attribute with a match scores the
length (in words) of its longest matching phrase. The question asks about the single attribute with the
highest score; if no attribute matches, or two attributes tie for the highest score ("is it a living
animal?"), the question is not understood and costs nothing. So "does it have four legs?" asks ``four_legs``
(two words beat ``legs``' one), and "is it bigger than a car?" asks ``big`` (always relative to a breadbox).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from .objects import ATTRIBUTES, OBJECTS

_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_ARTICLES = ("a ", "an ", "the ")

#: A few everyday objects of different kinds: the secret pool of the easy preset.
EASY_OBJECTS: tuple[str, ...] = (
    "apple", "banana", "bicycle", "book", "bread", "car", "cat", "chair", "clock", "cow", "dog", "duck",
    "elephant", "football", "guitar", "hammer", "knife", "milk", "phone", "pillow", "rose", "shark",
    "shoe", "spider", "tree",
)


@dataclass(frozen=True)
class TwentyQuestionsPreset:
    """One difficulty: the objects the secret is drawn from, and how many questions (guesses included)."""

    objects: tuple[str, ...]
    max_questions: int


PRESETS: dict[str, TwentyQuestionsPreset] = {
    "easy": TwentyQuestionsPreset(EASY_OBJECTS, 20),
    "medium": TwentyQuestionsPreset(tuple(OBJECTS), 20),
    "hard": TwentyQuestionsPreset(tuple(OBJECTS), 12),
}


def _index_phrases() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """First word of each keyword phrase -> ``(attribute, phrase)``: matching costs one lookup per word."""
    index: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for name, attribute in ATTRIBUTES.items():
        for keyword in attribute.keywords:
            phrase = tuple(keyword.split())
            index.setdefault(phrase[0], []).append((name, phrase))
    return index


_PHRASES = _index_phrases()


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def match_attribute(question: str) -> tuple[str | None, str]:
    """``(attribute, "")`` for an understood question, else ``(None, why)`` under the keyword rule."""
    tokens = words(question)
    scores: dict[str, int] = {}
    for i, token in enumerate(tokens):
        for name, phrase in _PHRASES.get(token, ()):
            if tuple(tokens[i : i + len(phrase)]) == phrase:
                scores[name] = max(scores.get(name, 0), len(phrase))
    if not scores:
        return None, "no known property was mentioned"
    best = max(scores.values())
    tied = [name for name, score in scores.items() if score == best]
    if len(tied) > 1:
        return None, f"it mentions several properties ({', '.join(tied)}); ask about one at a time"
    return tied[0], ""


def answer(obj: str, attribute: str) -> bool:
    """The truth of ``attribute`` for ``obj`` (negated attributes answer the opposite of their base)."""
    base = ATTRIBUTES[attribute].negation_of
    return attribute in OBJECTS[obj] if base is None else base not in OBJECTS[obj]


def canonical(attribute: str, value: bool) -> tuple[str, bool]:
    """The same fact stated on the base attribute (``small: yes`` is ``big: no``)."""
    base = ATTRIBUTES[attribute].negation_of
    return (base, not value) if base is not None else (attribute, value)


def object_named(text: str) -> str | None:
    """The object a guess names (articles and case ignored), or ``None``."""
    name = " ".join(words(text))
    for article in _ARTICLES:
        if name.startswith(article):
            name = name[len(article):]
    return name if name in OBJECTS else None


def candidates(pool: Iterable[str], facts: dict[str, bool], wrong: Iterable[str] = ()) -> list[str]:
    """Objects of ``pool`` consistent with every known ``attribute: value`` fact and not yet ruled out."""
    excluded = set(wrong)
    return [o for o in pool if o not in excluded and all((a in OBJECTS[o]) == v for a, v in facts.items())]


def solver_action(pool: Sequence[str], facts: dict[str, bool], wrong: Iterable[str] = ()) -> str:
    """The questioner's next move: guess when one object is left, else the most even split (ties: table order)."""
    left = candidates(pool, facts, wrong)
    if len(left) <= 1:
        return f"guess {left[0] if left else pool[0]}"
    best, best_worst = None, len(left)
    for name, attribute in ATTRIBUTES.items():
        if attribute.negation_of is not None or name in facts:
            continue
        yes = sum(name in OBJECTS[o] for o in left)
        worst = max(yes, len(left) - yes)
        if worst < best_worst:
            best, best_worst = name, worst
    return ATTRIBUTES[best].question if best is not None else f"guess {left[0]}"
