"""The vocabulary of the domain model: items, knowledge components and misconceptions.

A *knowledge component* (Koedinger, Corbett & Perfetti, 2012) is one skill the post-test measures, such as
adding two fractions. A *misconception* is a buggy procedure for one component (Brown & Burton, 1978,
"Diagnostic models for procedural bugs in basic mathematical skills"): a student who holds it does not
answer at random but computes, consistently, a characteristic wrong answer. That is what makes it
diagnosable from answers and what a tutor must confront rather than merely re-tell.

All three types are frozen: the catalogue is static data shared by every env and every student.
Students refer to components and misconceptions by id, so snapshots stay small.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from ..answers import value


@dataclass(frozen=True)
class Item:
    """One exercise. ``params`` are the integers it was built from, in the layout of its component's ``form``."""

    component: str
    form: str
    """The item's shape within its component (``"sub_neg"``, ``"add_mul"``, …); procedures branch on it."""
    params: tuple[int, ...]
    prompt: str
    """What the student is asked, e.g. ``"1/3 + 2/5 = ?"``; also the item's identity (see :attr:`key`)."""
    answer: str
    """The canonical correct answer."""
    options: tuple[str, ...] = ()
    """The choices of a comparison item (the answer is one of them); empty for open-response items."""

    @property
    def key(self) -> str:
        """Two items are the same item when they ask the same thing."""
        return self.prompt

    @property
    def answer_value(self) -> Fraction:
        x = value(self.answer)
        assert x is not None, f"item answer {self.answer!r} must be a number"
        return x

    def is_correct(self, answer: str | None) -> bool:
        """Whether ``answer`` has the value of the correct answer (spelling does not matter)."""
        return answer is not None and value(answer) == self.answer_value

    def shown_values(self) -> frozenset[Fraction]:
        """The numbers the item itself shows (quoting the question reveals nothing)."""
        if self.options:
            return frozenset(v for v in map(value, self.options) if v is not None)
        return frozenset(Fraction(p) for p in self.params)


#: Builds a random item of the given form from the generator (not yet checked for being diagnostic).
Builder = Callable[[np.random.Generator, str], Item]
#: A procedure: the answer a student following it gives to an item.
Procedure = Callable[[Item], str]


@dataclass(frozen=True)
class Misconception:
    """A documented buggy procedure for one component, with what addresses it."""

    id: str
    component: str
    name: str
    belief: str
    """What the student believes, in one sentence (shown to the tutor in the catalogue)."""
    citation: str
    """Where the misconception is documented in the education literature."""
    procedure: Procedure
    """The buggy procedure: its answer to any item of the component (equal to the correct answer on items
    that cannot reveal the bug; the generator makes pre- and post-test items that do reveal it)."""
    forms: tuple[str, ...]
    """Item forms on which the bug shows (the generator picks one of these to make a diagnostic item)."""
    cues: tuple[str, ...]
    """Lower-case phrases that address this misconception; a hint or explanation containing one targets it."""
    says: str
    """How a student holding it describes their own working (rendered in chatty answers)."""
    explanation: str
    """A targeted explanation of why the procedure is wrong (no digits: it reveals no answer)."""
    counter_example: str
    """A probing question that confronts the belief with a case it gets absurdly wrong (no digits)."""

    def answer(self, item: Item) -> str:
        return self.procedure(item)

    def reveals(self, item: Item) -> bool:
        """Whether a student holding this misconception would get ``item`` wrong."""
        return not item.is_correct(self.procedure(item))


@dataclass(frozen=True)
class Component:
    """A knowledge component: how to make its items, how it is taught, and what it rests on."""

    id: str
    name: str
    description: str
    prerequisites: tuple[str, ...]
    """Components whose mastery makes this one easier to learn (learning is slower without them)."""
    forms: tuple[str, ...]
    build: Builder
    misconceptions: tuple[str, ...]
    keywords: tuple[str, ...]
    """Lower-case phrases by which free text refers to this component."""
    guess: float
    """Chance of a correct guess without the skill (0.5 for two-way comparisons, low for open answers)."""
    explanation: str
    """How to do it right (no digits); the untargeted explanation the scripted expert gives."""
    hint: str
