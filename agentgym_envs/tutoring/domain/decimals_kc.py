"""Decimals: comparing two decimals.

Misconceptions (each a buggy procedure below):

* ``longer_is_larger``: the decimal with more digits is larger, because the digits after the point are read
  as a whole number, 0.45 > 0.8 (the "whole number rule" of Resnick et al., 1989, "Conceptual bases of
  arithmetic errors: the case of decimal fractions"; Sackur-Grisvard & Léonard, 1985; Steinle & Stacey, 1998).
* ``shorter_is_larger``: the decimal with fewer digits is larger, because tenths are bigger than
  hundredths, 0.4 > 0.45 (the "shorter-is-larger" / denominator-focused thinking of Steinle & Stacey, 2004;
  Resnick et al., 1989, "fraction rule").
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..answers import fmt_decimal
from .types import Component, Item, Misconception


def _build_compare(rng: np.random.Generator, form: str) -> Item:
    """Two decimals below one with different numbers of places (one and two, or two and three)."""
    short_places = int(rng.integers(1, 3))
    short, long = _draw(rng, short_places), _draw(rng, short_places + 1)
    short_text, long_text = fmt_decimal(short), fmt_decimal(long)
    pair = (short_text, long_text) if rng.random() < 0.5 else (long_text, short_text)
    answer = short_text if short > long else long_text
    return Item("decimal_compare", form, (short_places, short_places + 1), f"Which is larger: {pair[0]} or {pair[1]}?",
                answer, pair)


def _draw(rng: np.random.Generator, places: int) -> Fraction:
    """A decimal in (0, 1) with exactly ``places`` places (no trailing zero, which would change its length)."""
    numerator = int(rng.integers(1, 10 ** places))
    while numerator % 10 == 0:
        numerator = int(rng.integers(1, 10 ** places))
    return Fraction(numerator, 10 ** places)


def _digits_after_point(option: str) -> int:
    return int(option.partition(".")[2] or "0")


def _longer(item: Item) -> str:
    first, second = item.options
    return first if _digits_after_point(first) > _digits_after_point(second) else second


def _shorter(item: Item) -> str:
    first, second = item.options
    return first if len(first) < len(second) else second


COMPONENTS = (
    Component(
        id="decimal_compare", name="comparing decimals",
        description="Say which of two decimals is larger.",
        prerequisites=("frac_compare",), forms=("cmp",), build=_build_compare,
        misconceptions=("longer_is_larger", "shorter_is_larger"),
        keywords=("decimal", "decimals", "decimal point", "tenths", "hundredths", "thousandths", "place value"),
        guess=0.5,
        explanation="To compare decimals, line up the decimal points and compare place by place, starting with "
                    "the tenths; the first place where they differ decides.",
        hint="Which of the two has more tenths?",
    ),
)

MISCONCEPTIONS = (
    Misconception(
        id="longer_is_larger", component="decimal_compare", name="longer is larger",
        belief="The decimal with more digits after the point is larger (digits read as a whole number).",
        citation="Resnick et al. (1989); Sackur-Grisvard & Léonard (1985); Steinle & Stacey (1998)",
        procedure=_longer, forms=("cmp",),
        cues=("more digits", "longer decimal", "longer number", "number of digits", "as a whole number",
              "not a whole number", "digit by digit", "tenths place first", "compare the tenths"),
        says="This one has more digits, so it's bigger.",
        explanation="The digits after the point are not a whole number: each place is ten times smaller than the "
                    "one before. Compare the tenths first, then the hundredths; more digits does not mean larger.",
        counter_example="Is nine tenths more or less than ten hundredths? Which one has more digits after the point?",
    ),
    Misconception(
        id="shorter_is_larger", component="decimal_compare", name="shorter is larger",
        belief="The decimal with fewer digits is larger, because tenths are bigger than hundredths.",
        citation="Steinle & Stacey (2004); Resnick et al. (1989)",
        procedure=_shorter, forms=("cmp",),
        cues=("shorter decimal", "fewer digits", "shorter is larger", "tenths are bigger", "hundredths are smaller",
              "add a zero", "adding a zero", "trailing zero", "annex a zero"),
        says="It only goes to tenths, and tenths are bigger than hundredths.",
        explanation="A decimal with fewer digits is not automatically larger: add zeros so both have the same "
                    "number of places, then compare them like whole numbers of hundredths or thousandths.",
        counter_example="Is four tenths larger than forty-five hundredths? What happens if you write four tenths "
                        "as hundredths?",
    ),
)
