"""Mastermind rules: peg scoring against brute force, the vectorised scorer, parsing and the codebreaker."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.games.mastermind import rules

code = st.lists(st.integers(1, 6), min_size=4, max_size=4).map(tuple)


def brute_force_score(guess, secret):
    """Black pegs by position, then white pegs by greedily pairing each leftover guess peg."""
    black = sum(g == s for g, s in zip(guess, secret))
    left_secret = [s for g, s in zip(guess, secret) if g != s]
    white = 0
    for g, s in zip(guess, secret):
        if g != s and g in left_secret:
            left_secret.remove(g)
            white += 1
    return black, white


@given(code, code)
def test_score_matches_brute_force(guess, secret):
    assert rules.score(guess, secret) == brute_force_score(guess, secret)


@given(code)
def test_vectorised_scores_equal_scalar_scores(guess):
    codes, counts = rules.code_table(4, 6)
    encoded = rules.score_all(guess, codes, counts)
    for i in range(0, len(codes), 37):
        black, white = rules.score(guess, tuple(int(x) for x in codes[i]))
        assert encoded[i] == black * 16 + white


@pytest.mark.parametrize("text, expected", [
    ("1234", (1, 2, 3, 4)), ("1 2 3 4", (1, 2, 3, 4)), ("1,2,3,4", (1, 2, 3, 4)), ("[6, 6, 1, 1]", (6, 6, 1, 1)),
])
def test_parse_code_accepts_common_spellings(text, expected):
    assert rules.parse_code(text, 4, 6) == expected


@pytest.mark.parametrize("text, reason", [("123", "has 4 digits"), ("1237", "between 1 and 6"), ("abcd", "digits from 1"),
                                          ("", "digits from 1"), ("12345", "has 4 digits")])
def test_parse_code_explains_bad_codes(text, reason):
    assert reason in rules.parse_code(text, 4, 6)


def _play(secret, preset):
    history = []
    while not history or history[-1][1][0] != preset.length:
        guess = rules.solver_guess(tuple(history), preset.length, preset.colours)
        assert all(rules.score(g, guess) == pegs for g, pegs in history), "the codebreaker plays consistent codes"
        history.append((guess, rules.score(guess, secret)))
    return len(history)


@pytest.mark.parametrize("difficulty, stride", [("easy", 1), ("medium", 13), ("hard", 2521)])
def test_codebreaker_cracks_every_sampled_code_within_the_limit(difficulty, stride):
    preset = rules.PRESETS[difficulty]
    codes, _ = rules.code_table(preset.length, preset.colours)
    for i in range(0, len(codes), stride):
        secret = tuple(int(x) for x in codes[i])
        assert _play(secret, preset) <= preset.max_guesses, secret
