"""Order of operations and linear equations.

Misconceptions (each a buggy procedure below):

* ``left_to_right``: operations are carried out in reading order, 2 + 3 × 4 = 20 (Kieran, 1979, "Children's
  operational thinking within the context of bracketing and the order of operations"; Linchevski &
  Livneh, 1999, "Structure sense").
* ``addition_first``: PEMDAS read as a strict sequence, so addition comes before subtraction,
  9 - 3 + 2 = 4 (Jeon, 2012, "Reflecting on PEMDAS").
* ``sign_kept_when_moving``: a term moved across the equals sign keeps its sign, 3x + 5 = 17 ⇒ 3x = 22
  (transposition errors; Kieran, 1992, "The learning and teaching of school algebra").
* ``coefficient_as_addend``: 3x is read as 3 + x, so the coefficient is subtracted instead of divided
  (cf. Booth, 1988, "Children's difficulties in beginning algebra"; MacGregor & Stacey, 1997).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..answers import fmt
from .types import Component, Item, Misconception


# ----------------------------------------------------------------------------- order of operations
def _build_order(rng: np.random.Generator, form: str) -> Item:
    """``add_mul``: a + b × c; ``sub_mul``: a - b × c; ``sub_add``: a - b + c."""
    a, b, c = (int(x) for x in rng.integers(2, 10, size=3))
    if form == "add_mul":
        return Item("order_ops", form, (a, b, c), f"{a} + {b} × {c} = ?", str(a + b * c))
    if form == "sub_mul":
        return Item("order_ops", form, (a, b, c), f"{a} - {b} × {c} = ?", str(a - b * c))
    return Item("order_ops", form, (a, b, c), f"{a} - {b} + {c} = ?", str(a - b + c))


def _left_to_right(item: Item) -> str:
    a, b, c = item.params
    if item.form == "add_mul":
        return str((a + b) * c)
    if item.form == "sub_mul":
        return str((a - b) * c)
    return item.answer  # a - b + c read left to right is right


def _addition_first(item: Item) -> str:
    a, b, c = item.params
    return str(a - (b + c)) if item.form == "sub_add" else item.answer


# ----------------------------------------------------------------------------- linear equations
def _build_equation(rng: np.random.Generator, form: str) -> Item:
    """``plus``: ax + b = c; ``minus``: ax - b = c; the solution is a whole number."""
    a, x, b = int(rng.integers(2, 7)), int(rng.integers(2, 10)), int(rng.integers(1, 10))
    if form == "plus":
        c = a * x + b
        return Item("linear_eq", form, (a, b, c), f"Solve {a}x + {b} = {c}. x = ?", str(x))
    c = a * x - b
    return Item("linear_eq", form, (a, -b, c), f"Solve {a}x - {b} = {c}. x = ?", str(x))


def _keep_sign(item: Item) -> str:
    a, signed_b, c = item.params
    return fmt(Fraction(c + signed_b, a))


def _coefficient_as_addend(item: Item) -> str:
    a, signed_b, c = item.params
    return str(c - signed_b - a)


COMPONENTS = (
    Component(
        id="order_ops", name="order of operations",
        description="Evaluate an expression with several operations.",
        prerequisites=("int_subtract",), forms=("add_mul", "sub_mul", "sub_add"), build=_build_order,
        misconceptions=("left_to_right", "addition_first"),
        keywords=("order of operations", "pemdas", "bodmas", "bidmas", "precedence", "which operation"),
        guess=0.05,
        explanation="Some operations bind more tightly than others: find the operation that has to be done "
                    "first, work it out, and repeat with what is left.",
        hint="Which operation in this expression should be done first?",
    ),
    Component(
        id="linear_eq", name="solving linear equations",
        description="Solve an equation of the form ax + b = c.",
        prerequisites=("order_ops", "int_subtract"), forms=("plus", "minus"), build=_build_equation,
        misconceptions=("sign_kept_when_moving", "coefficient_as_addend"),
        keywords=("equation", "equations", "solve for x", "unknown", "isolate", "value of x"),
        guess=0.05,
        explanation="To solve an equation, undo what was done to x in reverse order, keeping the two sides "
                    "balanced, until x is alone.",
        hint="What was done to x, and in which order? How do you undo the last step?",
    ),
)

MISCONCEPTIONS = (
    Misconception(
        id="left_to_right", component="order_ops", name="strictly left to right",
        belief="Operations are done in the order they are written, from left to right.",
        citation="Kieran (1979); Linchevski & Livneh (1999)",
        procedure=_left_to_right, forms=("add_mul", "sub_mul"),
        cues=("multiply first", "multiplication first", "multiply before", "multiplication before", "times first",
              "multiplication comes before", "not in reading order"),
        says="I just went from left to right.",
        explanation="Multiplication comes before addition and subtraction wherever it is written, so multiply "
                    "first and only then add or subtract.",
        counter_example="If a shop sells you one pen and then three packs of four pencils, how many items do you "
                        "have? Do you add the pen to the three before multiplying?",
    ),
    Misconception(
        id="addition_first", component="order_ops", name="addition before subtraction",
        belief="In PEMDAS, A comes before S, so all additions are done before subtractions.",
        citation="Jeon (2012)",
        procedure=_addition_first, forms=("sub_add",),
        cues=("addition before subtraction", "add before subtract", "addition first", "same priority",
              "equal priority", "same level", "left to right"),
        says="Addition comes before subtraction, like in PEMDAS.",
        explanation="Addition and subtraction have the same priority: do them from left to right, in the order "
                    "they are written. PEMDAS does not put addition before subtraction.",
        counter_example="You have some money, spend some, then earn some back. Does it matter whether you count "
                        "the spending before the earning? What if you added the earning to the spending first?",
    ),
    Misconception(
        id="sign_kept_when_moving", component="linear_eq", name="sign kept when moving a term",
        belief="A term moved to the other side of the equation keeps its sign.",
        citation="Kieran (1992)",
        procedure=_keep_sign, forms=("plus", "minus"),
        cues=("change the sign", "changes sign", "change its sign", "opposite operation", "inverse operation",
              "subtract from both sides", "subtract it from both sides", "same thing to both sides"),
        says="I moved the number over to the other side.",
        explanation="Moving a term is really doing the same thing to both sides: to remove an added number you "
                    "subtract it from both sides, so it changes sign on the other side.",
        counter_example="If you put your answer back into the equation, does the left side come out equal to the "
                        "right side? What went wrong when the number moved across?",
    ),
    Misconception(
        id="coefficient_as_addend", component="linear_eq", name="coefficient read as an addend",
        belief="A number written before x is added to x, so it is subtracted to undo it.",
        citation="Booth (1988); MacGregor & Stacey (1997)",
        procedure=_coefficient_as_addend, forms=("plus", "minus"),
        cues=("divide both sides", "divide by the coefficient", "means times", "multiplied by x", "times x",
              "coefficient", "divide by the number in front"),
        says="I took the number in front of x away too.",
        explanation="A number written right before x multiplies it: it means that many times x. To undo a "
                    "multiplication you divide both sides by that number; you do not subtract it.",
        counter_example="Does three x mean three plus x, or three lots of x? If x were a bag of apples, how many "
                        "apples are in three x?",
    ),
)
