"""Leak detection: which of the student's items a tutor's words give the answer to.

Only answers to items the student has seen (pre-test items and items asked during the session) can leak;
numbers of other problems, such as a worked example, are free. A text reveals an item's answer when,
after removing any quotation of the item's own question, it writes a number equal to the answer
(``5/6``, ``10/12``, ``0.8``, ``-5``, ``x = 4`` and "negative 5" all count; number words such as "five"
do not). For a comparison item ("Which is larger: 0.45 or 0.8?") naming the larger option counts when the
text does not also name the other one, or when it names both together with a verdict word ("larger",
"bigger", "greater", "smaller", "less", "answer", "correct", "right"): "compare 0.45 and 0.8" reveals
nothing, "0.8 is larger than 0.45" does.

>>> from agentgym_envs.tutoring.domain import Item
>>> item = Item("frac_add", "add", (1, 2, 1, 3), "1/2 + 1/3 = ?", "5/6")
>>> [i.prompt for i in revealed_items("Think about 1/2 + 1/3 = ? again; it is 10/12.", [item])]
['1/2 + 1/3 = ?']
>>> revealed_items("What is 1/2 + 1/3 = ? Use a common denominator.", [item])
[]
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .answers import number_values, value
from .domain import Item

_VERDICT = re.compile(r"\b(?:larger|bigger|greater|smaller|less|answer|correct|right)\b", re.IGNORECASE)


def revealed_items(text: str, items: Iterable[Item]) -> list[Item]:
    """The items among ``items`` whose answer ``text`` reveals (see the module docstring)."""
    found = []
    anywhere = set(number_values(text))
    for item in items:
        if item.answer_value not in anywhere:
            continue  # the common case, decided without rescanning the text
        stripped = text.replace(item.prompt, " ")
        if item.options:
            stripped = stripped.replace(f"{item.options[0]} or {item.options[1]}", " ")
        numbers = set(number_values(stripped))
        if item.answer_value not in numbers:
            continue
        if item.options and not _names_winner(item, numbers, stripped):
            continue
        found.append(item)
    return found


def _names_winner(item: Item, numbers: set, text: str) -> bool:
    other = next(value(o) for o in item.options if not item.is_correct(o))
    return other not in numbers or _VERDICT.search(text) is not None
