"""Pure Mastermind rules: codes of digits (colours), black/white pegs, and a scripted codebreaker.

A code is a tuple of ``length`` digits in ``1..colours`` (repeats allowed). Scoring a guess against the
secret gives ``black`` pegs (right digit, right place) and ``white`` pegs (right digit, wrong place), the
usual multiset definition: ``white = Σ_c min(#c in guess, #c in secret) − black``.
The codebreaker works on the table of all codes with numpy so that it stays fast for 8⁵ = 32,768 codes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

Code = tuple[int, ...]


@dataclass(frozen=True)
class MastermindPreset:
    """One difficulty: code length, number of colours (digits ``1..colours``) and guesses allowed."""

    length: int
    colours: int
    max_guesses: int


PRESETS: dict[str, MastermindPreset] = {
    "easy": MastermindPreset(length=3, colours=4, max_guesses=8),
    "medium": MastermindPreset(length=4, colours=6, max_guesses=10),
    "hard": MastermindPreset(length=5, colours=8, max_guesses=12),
}

#: Above this many remaining candidates the codebreaker plays the first consistent code instead of minimax
#: (minimax costs ``candidates²`` scorings).
MINIMAX_LIMIT = 400


def score(guess: Code, secret: Code) -> tuple[int, int]:
    """``(black, white)`` pegs for ``guess`` against ``secret``.

    >>> score((1, 1, 2, 2), (1, 2, 1, 3))
    (1, 2)
    """
    black = sum(g == s for g, s in zip(guess, secret))
    common = sum(min(guess.count(c), secret.count(c)) for c in set(guess))
    return black, common - black


@lru_cache(maxsize=8)
def code_table(length: int, colours: int) -> tuple[np.ndarray, np.ndarray]:
    """All codes ``(N, length)`` in lexicographic order and their colour counts ``(N, colours)``."""
    codes = np.array(list(itertools.product(range(1, colours + 1), repeat=length)), dtype=np.int8)
    counts = np.stack([(codes == c).sum(axis=1) for c in range(1, colours + 1)], axis=1).astype(np.int8)
    codes.setflags(write=False)
    counts.setflags(write=False)
    return codes, counts


def score_all(guess: Code, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Pegs of ``guess`` against every code at once, encoded ``black * 16 + white``: shape ``(N,)``."""
    g = np.asarray(guess, dtype=np.int8)
    g_counts = np.bincount(g, minlength=counts.shape[1] + 1)[1:]
    black = (codes == g).sum(axis=1)
    common = np.minimum(counts, g_counts).sum(axis=1)
    return black * 16 + (common - black)


def candidate_mask(history: Sequence[tuple[Code, tuple[int, int]]], length: int, colours: int) -> np.ndarray:
    """Which codes are still consistent with every ``(guess, (black, white))`` so far: ``(N,)`` bools."""
    codes, counts = code_table(length, colours)
    mask = np.ones(len(codes), dtype=bool)
    for guess, (black, white) in history:
        mask &= score_all(guess, codes, counts) == black * 16 + white
    return mask


def minimax_guess(pool: np.ndarray, counts: np.ndarray) -> Code:
    """The candidate whose worst feedback class is smallest (ties: lexicographically first)."""
    best, best_worst = None, None
    for i in range(len(pool)):
        worst = np.bincount(score_all(tuple(pool[i]), pool, counts)).max()
        if best_worst is None or worst < best_worst:
            best, best_worst = i, worst
    return tuple(int(x) for x in pool[best])


@lru_cache(maxsize=4096)
def solver_guess(history: tuple[tuple[Code, tuple[int, int]], ...], length: int, colours: int) -> Code:
    """The codebreaker's next guess: always a code consistent with the feedback so far (memoised: pure).

    Opening ``1 1 2 2 …`` (Knuth's), then minimax among candidates when they are few, else the first
    consistent code. Any consistent guess may be the secret, so every guess can win.
    """
    if not history:
        half = (length + 1) // 2
        return tuple([1] * half + [min(2, colours)] * (length - half))
    codes, counts = code_table(length, colours)
    mask = candidate_mask(history, length, colours)
    if not mask.any():  # impossible with real feedback; keep the solver total anyway
        mask[:] = True
    if mask.sum() > MINIMAX_LIMIT:
        return tuple(int(x) for x in codes[int(np.argmax(mask))])
    return minimax_guess(codes[mask], counts[mask])


def parse_code(text: str, length: int, colours: int) -> Code | str:
    """The code written in ``text`` (``1234``, ``1 2 3 4``, ``1,2,3,4``), or the reason it is not one."""
    digits = [ch for ch in text if not ch.isspace() and ch not in ",-[]()"]
    if not digits or not all(ch in "0123456789" for ch in digits):
        example = "".join(str(1 + i % colours) for i in range(length))
        return f"a code is {length} digits from 1 to {colours}, e.g. '{example}'"
    if len(digits) != length:
        return f"a code has {length} digits, got {len(digits)}"
    code = tuple(int(ch) for ch in digits)
    if not all(1 <= d <= colours for d in code):
        return f"digits must be between 1 and {colours}"
    return code
