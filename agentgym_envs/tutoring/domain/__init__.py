"""The domain model: school-math knowledge components, their misconceptions, and an item generator.

Six components, each with two documented misconceptions (see each module's docstring for the sources):

====================  ===========================  ===================================================
component             prerequisites                misconceptions
====================  ===========================  ===================================================
``frac_compare``      —                            ``larger_denominator_larger``, ``gap_thinking``
``frac_add``          ``frac_compare``             ``add_across``, ``keep_numerators``
``decimal_compare``   ``frac_compare``             ``longer_is_larger``, ``shorter_is_larger``
``int_subtract``      —                            ``double_negative_ignored``, ``sign_dropped``
``order_ops``         ``int_subtract``             ``left_to_right``, ``addition_first``
``linear_eq``         ``order_ops``, ``int_subtract``  ``sign_kept_when_moving``, ``coefficient_as_addend``
====================  ===========================  ===================================================

Items are *isomorphic*: same component and form, fresh numbers from a seeded generator. They are
*diagnostic*: :func:`generate_item` only returns items whose answer is not one of the numbers shown, and
on which the misconceptions that would get the item wrong would do so with different answers, so a wrong
answer names the bug behind it (:func:`consistent_misconceptions`).

>>> import numpy as np
>>> item = generate_item("frac_add", np.random.default_rng(0), target="add_across")
>>> MISCONCEPTIONS["add_across"].reveals(item), item.is_correct(MISCONCEPTIONS["add_across"].answer(item))
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Literal

import numpy as np

from ..answers import fmt, value
from . import algebra_kc, decimals_kc, fractions_kc, negatives_kc
from .types import Component, Item, Misconception

_MODULES = (fractions_kc, decimals_kc, negatives_kc, algebra_kc)
COMPONENTS: dict[str, Component] = {c.id: c for m in _MODULES for c in m.COMPONENTS}
MISCONCEPTIONS: dict[str, Misconception] = {x.id: x for m in _MODULES for x in m.MISCONCEPTIONS}
COMPONENT_IDS: tuple[str, ...] = tuple(COMPONENTS)
MISCONCEPTION_IDS: tuple[str, ...] = tuple(MISCONCEPTIONS)

#: Literal types of the ids (tool schemas turn them into ``enum``s).
ComponentId = Literal[COMPONENT_IDS]  # type: ignore[valid-type]
MisconceptionId = Literal[MISCONCEPTION_IDS]  # type: ignore[valid-type]

#: The builders succeed with high probability per draw; running out means a builder is broken.
MAX_TRIES = 500

__all__ = [
    "Component", "Item", "Misconception", "COMPONENTS", "MISCONCEPTIONS", "COMPONENT_IDS", "MISCONCEPTION_IDS",
    "ComponentId", "MisconceptionId", "generate_item", "consistent_misconceptions", "wrong_answer",
]


def generate_item(component: str, rng: np.random.Generator, target: str | None = None,
                  avoid: Iterable[str] = frozenset()) -> Item:
    """A fresh diagnostic item of ``component``; with ``target``, one on which that misconception shows.

    ``avoid`` holds item keys already used (the post-test avoids every item the student has seen).
    """
    spec = COMPONENTS[component]
    forms = MISCONCEPTIONS[target].forms if target else spec.forms
    avoided = avoid if isinstance(avoid, (set, frozenset)) else set(avoid)
    for _ in range(MAX_TRIES):
        item = spec.build(rng, forms[int(rng.integers(len(forms)))])
        if item.key in avoided or not _well_formed(item):
            continue
        if target is not None and not MISCONCEPTIONS[target].reveals(item):
            continue
        if target is None and not any(MISCONCEPTIONS[m].reveals(item) for m in spec.misconceptions):
            continue
        if _distinct_bugs(item, spec):
            return item
    raise RuntimeError(f"could not build a diagnostic {component} item for target {target!r} in {MAX_TRIES} draws")


def _well_formed(item: Item) -> bool:
    answer = value(item.answer)
    if answer is None:
        return False
    return bool(item.options) or all(answer != p for p in item.params)


def _distinct_bugs(item: Item, spec: Component) -> bool:
    """The wrong answers the component's misconceptions give to ``item`` differ from each other."""
    wrong = [value(MISCONCEPTIONS[m].answer(item)) for m in spec.misconceptions if MISCONCEPTIONS[m].reveals(item)]
    # (pairwise ==, not a set: hashing Fractions costs more than comparing a handful of them)
    return all(wrong[i] != wrong[j] for i in range(len(wrong)) for j in range(i))


def consistent_misconceptions(attempts: Iterable[tuple[Item, str | None]]) -> list[str]:
    """Misconceptions that predict every answer in ``attempts`` and are revealed by at least one of them.

    ``attempts`` are ``(item, answer)`` pairs of one component. A student who holds a misconception answers
    by it every time, so the holder's answers are all predicted; a wrong answer nothing predicts points to a
    missing skill (or a slip) rather than a bug.
    """
    attempts = list(attempts)
    if not attempts:
        return []
    component = attempts[0][0].component
    found = []
    for m in COMPONENTS[component].misconceptions:
        bug = MISCONCEPTIONS[m]
        predicted = all(value(bug.answer(item)) == value(answer or "") for item, answer in attempts)
        if predicted and any(bug.reveals(item) for item, _ in attempts):
            found.append(m)
    return found


def wrong_answer(item: Item, rng: np.random.Generator) -> str:
    """A plausible wrong answer that no misconception predicts (a slip, or a failed guess)."""
    if item.options:
        return next(o for o in item.options if not item.is_correct(o))
    correct = item.answer_value
    bugs = {value(MISCONCEPTIONS[m].answer(item)) for m in COMPONENTS[item.component].misconceptions}
    candidates = [c for c in _near(correct) if c != correct and c not in bugs]
    return fmt(candidates[int(rng.integers(len(candidates)))])


def _near(x: Fraction) -> list[Fraction]:
    """Values an arithmetic slip could produce: off by one or two, or a numerator/denominator off by one."""
    if x.denominator == 1:
        return [x + 1, x - 1, x + 2, x - 2, x + 10, -x]
    p, q = x.numerator, x.denominator
    return [Fraction(p + 1, q), Fraction(p - 1, q) if p > 1 else Fraction(p + 2, q), Fraction(p, q + 1),
            Fraction(p, q - 1) if q > 2 else Fraction(p, q + 2), Fraction(p + 1, q + 1)]
