"""Pure Wordle rules: feedback with correct duplicate letters, hard-mode checks and the scripted solver.

Feedback is one mark per letter: ``G`` (green, right letter in the right place), ``Y`` (yellow, the letter
is in the word elsewhere) or ``.`` (gray). Duplicates follow the official game: greens are matched first,
then each remaining guess letter, left to right, is yellow only while the secret still has an unmatched
copy of that letter: ``EERIE`` against ``THEME`` gives ``Y...G`` (the last E is green, so only one
yellow E is left for the first three).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from .words import EASY_ANSWERS, WORDS

GREEN, YELLOW, GRAY = "G", "Y", "."
WORD_LENGTH = 5


@dataclass(frozen=True)
class WordlePreset:
    """One difficulty: where secrets come from, how many guesses, and whether hard mode is on."""

    answers: tuple[str, ...]
    max_guesses: int = 6
    hard_mode: bool = False


PRESETS: dict[str, WordlePreset] = {
    "easy": WordlePreset(EASY_ANSWERS),
    "medium": WordlePreset(WORDS),
    "hard": WordlePreset(WORDS, hard_mode=True),
}


def feedback(guess: str, secret: str) -> str:
    """The colour marks of ``guess`` against ``secret`` (same length, lower-case).

    >>> feedback("crane", "crane"), feedback("speed", "abide"), feedback("eerie", "theme")
    ('GGGGG', '..Y.Y', 'Y...G')
    """
    marks = [GRAY] * len(guess)
    unmatched = Counter(s for g, s in zip(guess, secret) if g != s)
    for i, (g, s) in enumerate(zip(guess, secret)):
        if g == s:
            marks[i] = GREEN
        elif unmatched[g] > 0:
            marks[i] = YELLOW
            unmatched[g] -= 1
    return "".join(marks)


def consistent(word: str, history: Sequence[tuple[str, str]]) -> bool:
    """Whether ``word`` could be the secret given every ``(guess, marks)`` seen so far."""
    return all(feedback(guess, word) == marks for guess, marks in history)


def hard_mode_violation(guess: str, history: Sequence[tuple[str, str]]) -> str | None:
    """Why ``guess`` breaks hard mode (revealed hints must be reused), or ``None`` when it is allowed.

    Hard mode as in the official game: every green letter stays in its place, and every revealed letter
    (green or yellow) appears in the guess at least as often as it was revealed in one earlier guess.
    """
    for previous, marks in history:
        for i, (letter, mark) in enumerate(zip(previous, marks)):
            if mark == GREEN and guess[i] != letter:
                return f"hard mode: letter {i + 1} must be {letter.upper()!r} (it was green)"
        revealed = Counter(letter for letter, mark in zip(previous, marks) if mark != GRAY)
        have = Counter(guess)
        for letter, count in sorted(revealed.items()):
            if have[letter] < count:
                return f"hard mode: the guess must contain {letter.upper()!r} (it was revealed in {previous.upper()})"
    return None


def candidates(answers: Sequence[str], history: Sequence[tuple[str, str]]) -> list[str]:
    """The answers still consistent with the feedback so far."""
    return [word for word in answers if consistent(word, history)]


def worst_bucket(guess: str, pool: Sequence[str]) -> int:
    """Size of the largest group of ``pool`` words that would give ``guess`` the same feedback."""
    return max(Counter(feedback(guess, word) for word in pool).values())


def best_guess(pool: Sequence[str]) -> str:
    """The solver's pick: the candidate whose worst-case feedback leaves the fewest candidates (minimax).

    Choosing among candidates keeps the solver legal in hard mode and lets every guess possibly win; ties
    go to the alphabetically first word so that the solver is deterministic.
    """
    if len(pool) <= 2:
        return min(pool)
    return min(pool, key=lambda word: (worst_bucket(word, pool), word))


@lru_cache(maxsize=4096)
def solver_guess(answers: tuple[str, ...], history: tuple[tuple[str, str], ...]) -> str:
    """The scripted solver's next guess given the feedback so far (pure, so memoised: rollouts share states)."""
    if not history:
        return best_guess(answers)  # the costliest step (~0.7 s for 500 words), computed once per pool
    pool = candidates(answers, history)
    # An inconsistent history (impossible for real feedback) would leave no candidate; fall back to the pool.
    return best_guess(pool or list(answers))
