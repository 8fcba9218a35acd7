"""Safe parsing of a one-shot Countdown answer such as ``(25 + 50) * 4 - 3``.

The text is parsed with :mod:`ast` (never evaluated by Python) and walked by a tiny interpreter that admits
only integer literals, parentheses and the four operators. The TV rules are checked on the way: each given
number is used at most once, and every intermediate result must be a positive integer (exact division, no
zero, no negatives). Anything else raises :class:`ExpressionError` with a reason the agent can act on.
"""

from __future__ import annotations

import ast
from collections import Counter

from .rules import Move, Pool, apply

#: Answers longer than this are rejected before parsing (six numbers and five operators fit easily; this also
#: keeps ``ast`` and the interpreter far from Python's recursion limit).
MAX_EXPRESSION_CHARS = 200

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_SYMBOLS = str.maketrans({"×": "*", "x": "*", "X": "*", "÷": "/", "−": "-", "–": "-", "[": "(", "]": ")"})


class ExpressionError(ValueError):
    """The answer is not a legal Countdown expression; ``str(e)`` says why."""


def evaluate(text: str, numbers: Pool) -> tuple[int, list[Move]]:
    """The value of the expression in ``text`` and the moves it makes, checked against the given ``numbers``.

    A trailing ``= <value>`` (the agent's own claim) is ignored.

    >>> evaluate("(25 + 50) * 4 - 3 = 297", (3, 4, 25, 50, 1, 9))[0]
    297
    """
    source = text.split("=", 1)[0].translate(_SYMBOLS).strip()
    if not source:
        raise ExpressionError("the answer is empty; write an expression such as '(25 + 50) * 4'")
    if len(source) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"the expression is {len(source)} characters long; at most {MAX_EXPRESSION_CHARS} are read")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise ExpressionError(f"could not parse {source[:60]!r} as arithmetic ({type(e).__name__})") from None
    _check_numbers(tree.body, numbers)  # first, so that values stay small before any arithmetic
    moves: list[Move] = []
    return _value(tree.body, moves), moves


def _value(node: ast.AST, moves: list[Move]) -> int:
    """Post-order evaluation, recording each operation as a move and enforcing the positive-integer rule."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        if node.value <= 0:
            raise ExpressionError(f"{node.value} is not one of the given numbers")
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _value(node.left, moves), _value(node.right, moves)
        op = _OPS[type(node.op)]
        result = apply(a, op, b)
        if result is None:
            why = "is not a whole number" if op == "/" else "is not positive"
            raise ExpressionError(f"{a} {op} {b} {why}; every intermediate result must be a positive integer")
        moves.append((a, op, b))
        return result
    raise ExpressionError(f"only whole numbers, + - * / and parentheses are allowed, found {_describe(node)}")


def _check_numbers(node: ast.AST, numbers: Pool) -> None:
    """Each literal must be one of the given numbers, used no more often than it was given."""
    used = Counter(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int)
    available = Counter(numbers)
    for number, count in sorted(used.items()):
        if available[number] == 0:
            raise ExpressionError(f"{number} is not one of the given numbers {list(numbers)}")
        if count > available[number]:
            raise ExpressionError(f"{number} is used {count} times but was given {available[number]} time(s)")


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return f"the literal {node.value!r}"
    if isinstance(node, ast.BinOp):
        return f"the operator {type(node.op).__name__}"
    return f"a {type(node).__name__} expression"
