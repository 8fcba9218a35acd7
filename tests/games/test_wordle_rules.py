"""Wordle rules: feedback against a brute-force definition (duplicates!), hard mode, and the solver."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.games.wordle import rules
from agentgym_envs.games.wordle.words import EASY_ANSWERS, WORDS

# A five-letter alphabet makes repeated letters (the hard case) frequent.
word = st.text(alphabet="abcde", min_size=5, max_size=5)


def brute_force_feedback(guess: str, secret: str) -> str:
    """The official definition, written another way: the i-th non-green copy of a letter in the guess is
    yellow iff the secret has at least i non-green copies of that letter."""
    marks = []
    for i, (g, s) in enumerate(zip(guess, secret)):
        if g == s:
            marks.append("G")
            continue
        rank = sum(1 for j in range(i + 1) if guess[j] == g and guess[j] != secret[j])
        available = sum(1 for j in range(5) if secret[j] == g and guess[j] != secret[j])
        marks.append("Y" if rank <= available else ".")
    return "".join(marks)


@given(word, word)
def test_feedback_matches_the_brute_force_definition(guess, secret):
    assert rules.feedback(guess, secret) == brute_force_feedback(guess, secret)


@given(word, word)
def test_feedback_never_marks_more_copies_than_the_secret_has(guess, secret):
    marks = rules.feedback(guess, secret)
    marked = Counter(g for g, m in zip(guess, marks) if m != ".")
    assert all(marked[letter] <= secret.count(letter) for letter in marked)


@pytest.mark.parametrize("guess, secret, expected", [
    ("speed", "abide", "..Y.Y"), ("eerie", "theme", "Y...G"), ("llama", "hello", "YY..."),
    ("crane", "crane", "GGGGG"), ("sassy", "essay", "YYG.G"), ("geese", "eerie", ".GY.G"),
])
def test_known_duplicate_letter_cases(guess, secret, expected):
    assert rules.feedback(guess, secret) == expected


@given(st.sampled_from(WORDS), st.lists(st.sampled_from(WORDS), max_size=4))
@settings(max_examples=60)
def test_consistent_words_always_satisfy_hard_mode(secret, guesses):
    history = [(g, rules.feedback(g, secret)) for g in guesses]
    assert rules.hard_mode_violation(secret, history) is None
    assert secret in rules.candidates(WORDS, history)


def test_hard_mode_names_the_missing_hint():
    history = [("crane", rules.feedback("crane", "crate"))]  # GGGG.
    assert rules.hard_mode_violation("crate", history) is None
    assert rules.hard_mode_violation("about", history).startswith("hard mode: letter 1 must be 'C'")


def test_word_lists_are_clean():
    assert len(WORDS) >= 300 and len(set(WORDS)) == len(WORDS) and list(WORDS) == sorted(WORDS)
    assert all(len(w) == 5 and w.isalpha() and w.islower() for w in WORDS)
    assert set(EASY_ANSWERS) <= set(WORDS)


@pytest.mark.parametrize("difficulty, sample", [("easy", None), ("medium", 120), ("hard", 60)])
def test_solver_finds_every_sampled_secret_within_the_guess_limit(difficulty, sample):
    preset = rules.PRESETS[difficulty]
    secrets = preset.answers if sample is None else preset.answers[:: max(1, len(preset.answers) // sample)]
    for secret in secrets:
        history: list[tuple[str, str]] = []
        while not history or history[-1][1] != "GGGGG":
            guess = rules.solver_guess(preset.answers, tuple(history))
            if preset.hard_mode:
                assert rules.hard_mode_violation(guess, history) is None
            history.append((guess, rules.feedback(guess, secret)))
        assert len(history) <= preset.max_guesses, (secret, history)
