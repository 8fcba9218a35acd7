"""Fractions: comparing two fractions, and adding fractions with unlike denominators.

Misconceptions (each a buggy procedure below):

* ``larger_denominator_larger``: whole-number bias, the fraction with the bigger numbers is bigger
  (Ni & Zhou, 2005, "Teaching and learning fraction and rational numbers: the origins and implications of
  whole number bias"; Stafylidou & Vosniadou, 2004).
* ``gap_thinking``: the fraction missing fewer pieces from a whole is bigger (Pearn & Stephens, 2004,
  "Why you have to probe to discover what year 8 students really think about fractions").
* ``add_across``: add numerators and add denominators, 1/2 + 1/3 = 2/5 (the "independent whole numbers"
  strategy in Siegler & Pyke, 2013; long documented, e.g. Kerslake, 1986; Carpenter et al., 1980 NAEP).
* ``keep_numerators``: find a common denominator but leave the numerators unscaled, 1/2 + 1/3 = 2/6
  (an incomplete conversion; see the error analyses of Brown & Quinn, 2006).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..answers import fmt
from .types import Component, Item, Misconception


# ----------------------------------------------------------------------------- comparing fractions
def _distinct_pair(rng: np.random.Generator, low: int, high: int) -> tuple[int, int]:
    """Two different integers in ``[low, high)``, uniformly (cheaper than ``rng.choice(replace=False)``)."""
    b, d = int(rng.integers(low, high)), int(rng.integers(low, high - 1))
    return b, d + (d >= b)


def _build_compare(rng: np.random.Generator, form: str) -> Item:
    b, d = _distinct_pair(rng, 2, 13)
    a, c = int(rng.integers(1, b)), int(rng.integers(1, d))
    left, right = f"{a}/{b}", f"{c}/{d}"
    larger = left if Fraction(a, b) > Fraction(c, d) else right
    if Fraction(a, b) == Fraction(c, d):
        larger = "equal"  # rejected by the generator (not a number)
    return Item("frac_compare", form, (a, b, c, d), f"Which is larger: {left} or {right}?", larger, (left, right))


def _larger_denominator(item: Item) -> str:
    a, b, c, d = item.params
    return item.options[0] if b > d else item.options[1]


def _smaller_gap(item: Item) -> str:
    a, b, c, d = item.params
    if b - a == d - c:
        return item.answer  # equal gaps: the bug has nothing to say, the student falls back on magnitude
    return item.options[0] if b - a < d - c else item.options[1]


# ----------------------------------------------------------------------------- adding fractions
def _build_add(rng: np.random.Generator, form: str) -> Item:
    b, d = _distinct_pair(rng, 2, 11)
    a, c = int(rng.integers(1, b)), int(rng.integers(1, d))
    return Item("frac_add", form, (a, b, c, d), f"{a}/{b} + {c}/{d} = ?", fmt(Fraction(a, b) + Fraction(c, d)))


def _add_across(item: Item) -> str:
    a, b, c, d = item.params
    return f"{a + c}/{b + d}"


def _keep_numerators(item: Item) -> str:
    a, b, c, d = item.params
    return f"{a + c}/{math.lcm(b, d)}"


COMPONENTS = (
    Component(
        id="frac_compare", name="comparing fractions",
        description="Say which of two fractions is larger.",
        prerequisites=(), forms=("cmp",), build=_build_compare,
        misconceptions=("larger_denominator_larger", "gap_thinking"),
        keywords=("compare fractions", "comparing fractions", "compare the fractions", "which fraction",
                  "larger fraction", "bigger fraction", "fraction is larger", "fraction is bigger",
                  "size of a fraction"),
        guess=0.5,
        explanation="To compare two fractions, rewrite them with a common denominator and compare the numerators, "
                    "or compare each of them with one half.",
        hint="Think about how big each fraction really is: how much of the whole does it cover?",
    ),
    Component(
        id="frac_add", name="adding fractions",
        description="Add two fractions with unlike denominators.",
        prerequisites=("frac_compare",), forms=("add",), build=_build_add,
        misconceptions=("add_across", "keep_numerators"),
        keywords=("add fractions", "adding fractions", "add the fractions", "fraction addition", "sum of fractions",
                  "common denominator"),
        guess=0.05,
        explanation="To add fractions, rewrite both with a common denominator so the pieces are the same size, "
                    "then add the numerators and keep that denominator.",
        hint="Can you add pieces of different sizes directly? What would make the pieces the same size?",
    ),
)

MISCONCEPTIONS = (
    Misconception(
        id="larger_denominator_larger", component="frac_compare", name="larger denominator is larger",
        belief="The fraction with the bigger denominator is the bigger fraction (whole-number bias).",
        citation="Ni & Zhou (2005); Stafylidou & Vosniadou (2004)",
        procedure=_larger_denominator, forms=("cmp",),
        cues=("bigger denominator", "larger denominator", "bigger bottom", "bigger number on the bottom",
              "more pieces", "smaller pieces", "denominator is bigger", "denominator is larger"),
        says="The one with the bigger number on the bottom is bigger.",
        explanation="A bigger denominator means the whole is cut into more pieces, so each piece is smaller. "
                    "Compare the sizes of the fractions, not the sizes of their denominators.",
        counter_example="Would you rather have one slice of a pizza cut in two, or one slice of the same pizza cut "
                        "into a hundred? Which slice is bigger, and which has the bigger denominator?",
    ),
    Misconception(
        id="gap_thinking", component="frac_compare", name="gap thinking",
        belief="The fraction missing fewer pieces from a whole is bigger, whatever the size of the pieces.",
        citation="Pearn & Stephens (2004)",
        procedure=_smaller_gap, forms=("cmp",),
        cues=("gap", "missing piece", "pieces missing", "pieces short", "short of a whole", "how far from a whole"),
        says="It's only missing a few pieces, so it's closer to a whole.",
        explanation="Being a few pieces short of a whole tells you nothing until you know how big the missing "
                    "pieces are. Compare the fractions' sizes with a common denominator instead.",
        counter_example="A half and ninety-nine hundredths are each one piece short of a whole. Is a missing half "
                        "the same amount as a missing hundredth?",
    ),
    Misconception(
        id="add_across", component="frac_add", name="adding numerators and denominators",
        belief="To add fractions, add the numerators and add the denominators.",
        citation="Siegler & Pyke (2013); Kerslake (1986); Carpenter et al. (1980, NAEP)",
        procedure=_add_across, forms=("add",),
        cues=("add the denominators", "adding the denominators", "add denominators", "add the bottoms",
              "adding the bottoms", "tops and bottoms", "numerators and denominators", "add across"),
        says="I added the tops and then the bottoms.",
        explanation="We never add the denominators: the denominator names the size of the pieces. Rewrite both "
                    "fractions with a common denominator, then add only the numerators.",
        counter_example="If we add tops and bottoms, a half plus a half would be two quarters, which is still only a "
                        "half. Can adding a half to a half leave you with a half?",
    ),
    Misconception(
        id="keep_numerators", component="frac_add", name="unscaled numerators",
        belief="Find a common denominator, then add the original numerators over it.",
        citation="Brown & Quinn (2006)",
        procedure=_keep_numerators, forms=("add",),
        cues=("scale the numerator", "scale the numerators", "numerators too", "numerator as well",
              "multiply the top", "change the numerator", "rename both", "same factor"),
        says="I made the bottoms the same and then added the tops.",
        explanation="When you change a denominator, scale the numerator by the same factor so the fraction keeps "
                    "its value; only then add the numerators.",
        counter_example="A third is how many sixths? If you change the bottom to sixths but keep the top, is that "
                        "still a third?",
    ),
)
