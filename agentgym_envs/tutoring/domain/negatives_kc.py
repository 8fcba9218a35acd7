"""Negative numbers: subtraction with negative numbers and negative results.

Misconceptions (each a buggy procedure below):

* ``double_negative_ignored``: subtracting a negative is treated as subtracting, 5 - (-3) = 2 (Vlassis, 2004,
  "Making sense of the minus sign or becoming flexible in 'negativity'"; Bofferding, 2014).
* ``sign_dropped``: the smaller magnitude is taken from the larger and the result is kept positive,
  3 - 8 = 5 (the integer form of Brown & Burton's, 1978, "smaller-from-larger" bug; Bofferding, 2014).
"""

from __future__ import annotations

import numpy as np

from .types import Component, Item, Misconception


def _build(rng: np.random.Generator, form: str) -> Item:
    """``sub_neg``: a - (-b); ``small_minus_large``: a - b with a < b; ``neg_minus_pos``: (-a) - b."""
    if form == "sub_neg":
        a, b = int(rng.integers(-9, 10)), int(rng.integers(1, 10))
        return Item("int_subtract", form, (a, -b), f"{a} - (-{b}) = ?", str(a + b))
    if form == "small_minus_large":
        a = int(rng.integers(1, 10))
        b = int(rng.integers(a + 1, 16))
        return Item("int_subtract", form, (a, b), f"{a} - {b} = ?", str(a - b))
    a, b = int(rng.integers(1, 10)), int(rng.integers(1, 10))
    return Item("int_subtract", form, (-a, b), f"-{a} - {b} = ?", str(-a - b))


def _ignore_double_negative(item: Item) -> str:
    if item.form != "sub_neg":
        return item.answer
    a, minus_b = item.params
    return str(a + minus_b)


def _drop_sign(item: Item) -> str:
    return str(abs(int(item.answer)))


COMPONENTS = (
    Component(
        id="int_subtract", name="subtracting with negative numbers",
        description="Subtract when a number or the result is negative.",
        prerequisites=(), forms=("sub_neg", "small_minus_large", "neg_minus_pos"), build=_build,
        misconceptions=("double_negative_ignored", "sign_dropped"),
        keywords=("negative number", "negative numbers", "negatives", "integer", "integers", "number line",
                  "below zero"),
        guess=0.05,
        explanation="Subtraction is a move along the number line: start at the first number, then move by the "
                    "amount taken away; where you land is the answer.",
        hint="Picture the number line. Which way do you move, and where do you end up?",
    ),
)

MISCONCEPTIONS = (
    Misconception(
        id="double_negative_ignored", component="int_subtract", name="subtracting a negative as subtracting",
        belief="Subtracting a negative number is the same as subtracting the number.",
        citation="Vlassis (2004); Bofferding (2014)",
        procedure=_ignore_double_negative, forms=("sub_neg",),
        cues=("subtracting a negative", "subtract a negative", "minus a negative", "taking away a negative",
              "take away a negative", "two negatives", "double negative", "add the opposite"),
        says="Minus minus is still just minus, so I took it away.",
        explanation="Subtracting a negative number is the same as adding its opposite: taking away a debt leaves "
                    "you richer, so you move up the number line, not down.",
        counter_example="If someone takes away a debt you owe, are you better off or worse off? So does taking "
                        "away a negative make the number bigger or smaller?",
    ),
    Misconception(
        id="sign_dropped", component="int_subtract", name="sign dropped",
        belief="Take the smaller number from the larger; the answer of a subtraction is never negative.",
        citation="Brown & Burton (1978, smaller-from-larger); Bofferding (2014)",
        procedure=_drop_sign, forms=("small_minus_large", "neg_minus_pos"),
        cues=("smaller from the larger", "smaller from larger", "result is negative", "answer is negative",
              "goes below zero", "below zero", "drop the sign", "lose the sign", "keep the sign", "sign of the answer"),
        says="You take the small one from the big one.",
        explanation="Taking a bigger number away from a smaller one goes below zero, so the answer is negative; "
                    "you cannot swap the numbers round in a subtraction.",
        counter_example="If you have a little money and spend more than you have, do you end up with money, or "
                        "owing money? Is the result above zero or below it?",
    ),
)
