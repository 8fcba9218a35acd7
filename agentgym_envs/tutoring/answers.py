"""Answers as text and as exact values: formatting, parsing, and finding numbers in a tutor's words.

Every answer in the tutoring family is a short string (``"5/6"``, ``"0.8"``, ``"-5"``) whose meaning is an
exact rational number. Correctness and leak detection compare values, never spellings, so ``"10/12"`` and
``"5/6"`` are the same answer and floating point never enters.

>>> fmt(Fraction(10, 12)), fmt(Fraction(-5)), value("0.80") == value("4/5")
('5/6', '-5', True)
>>> number_values("So 3 - 8 is -5, and x = 4; negative 2 too.")
[Fraction(3, 1), Fraction(8, 1), Fraction(-5, 1), Fraction(4, 1), Fraction(-2, 1)]
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

#: A number written with digits: optional attached minus, integer or decimal, optional ``/denominator``.
#: Digit runs are bounded (a 5,000-digit "number" is not a number a tutor means), and a minus sign counts
#: only when it is not a binary operator (``3-8`` and ``3 - 8`` hold 3 and 8; ``-8`` and ``(-8)`` hold -8).
_NUMBER = re.compile(r"(?<![\w.)])(-?)(\d{1,12}(?:\.\d{1,12})?)(?:\s?/\s?(\d{1,12}))?(?![\d])")
#: "negative 8" means -8 (but "3 minus 8" is a subtraction, so "minus" is not read as a sign).
_NEGATIVE_WORD = re.compile(r"\bnegative\s+(\d{1,12}(?:\.\d{1,12})?)(?![\d])", re.IGNORECASE)


def fmt(x: Fraction) -> str:
    """Canonical text of an exact value: an integer, or a reduced fraction ``p/q``."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def fmt_decimal(x: Fraction) -> str:
    """A terminating decimal as text (``Fraction(4, 5)`` → ``"0.8"``); used for the decimal items."""
    sign = "-" if x < 0 else ""
    x = abs(x)
    whole, rest = divmod(x.numerator, x.denominator)
    digits = ""
    while rest and len(digits) < 12:
        rest *= 10
        digit, rest = divmod(rest, x.denominator)
        digits += str(digit)
    return f"{sign}{whole}" + (f".{digits}" if digits else "")


@lru_cache(maxsize=1 << 16)
def value(text: str) -> Fraction | None:
    """The exact value of an answer string (``"5/6"``, ``"0.8"``, ``"-5"``, ``"x = 4"``), or ``None``."""
    text = text.strip().lower().removeprefix("x").strip().removeprefix("=").strip()
    match = _NUMBER.fullmatch(text)
    return _to_fraction(match) if match else None


def number_values(text: str) -> list[Fraction]:
    """Every number written in ``text``, in order of appearance (linear time, bounded digit runs)."""
    text = _NEGATIVE_WORD.sub(r"-\1", text)
    return [x for x in map(_to_fraction, _NUMBER.finditer(text)) if x is not None]


def _to_fraction(match: re.Match[str]) -> Fraction | None:
    sign, number, denominator = match.group(1), match.group(2), match.group(3)
    x = Fraction(number)
    if denominator is not None:
        if int(denominator) == 0:
            return None
        x /= int(denominator)
    return -x if sign else x
