"""The command filter in front of the TextWorld interpreter, and the challenge tables (pure: no textworld)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.games.textworld.challenges import CHALLENGES, SPLITS, GameSpec, resolve_level, split_seeds
from agentgym_envs.games.textworld.commands import MAX_COMMAND_CHARS, command_problem, normalise

VERBS = frozenset({"go", "take", "open", "look", "inventory", "examine", "put", "eat"})


@pytest.mark.parametrize("command", ["look", "take red apple from table", "go north", "examine chef's knife",
                                     "put old-key on shelf 2"])
def test_ordinary_commands_pass(command):
    assert command_problem(command, VERBS) is None


@pytest.mark.parametrize("raw, why", [
    ("\x00abc", "plain words"),                # NUL hangs the interpreter
    ("\ud800", "plain words"),                 # a lone surrogate cannot be encoded
    ("look. inventory", "plain words"),        # '.' chains commands
    ("take apple, pear", "plain words"),
    ("\x1b[2Jlook", "plain words"),
    ("☕ take", "plain words"),
    ("look then inventory", "One command per turn"),
    ("restart", "does not know the verb 'restart'"),
    ("quit", "does not know the verb"),
    ("save", "does not know the verb"),
    ("tw-trace-actions", "does not know the verb"),
    ("look " * 100, "characters long"),
])
def test_dangerous_commands_are_refused_with_a_reason(raw, why):
    problem = command_problem(normalise(raw), VERBS)
    assert problem is not None and why in problem


def test_normalise_collapses_newlines_so_nothing_is_queued_for_the_next_turn():
    assert normalise("  Look\r\nInventory\t") == "look inventory"


@given(st.text(max_size=400))
def test_any_text_is_judged_without_raising_and_accepted_text_is_safe(text):
    command = normalise(text)
    if command_problem(command, VERBS) is None:
        assert len(command) <= MAX_COMMAND_CHARS
        assert re.fullmatch(r"[a-z0-9' \-]+", command)
        assert command.split(" ")[0] in VERBS and "then" not in command.split(" ")


def test_difficulties_map_to_native_levels():
    assert resolve_level("cooking", None, None) == CHALLENGES["cooking"].difficulty_levels["medium"]
    assert resolve_level("treasure_hunter", "hard", None) == 25
    assert resolve_level("coin_collector", None, 42) == 42
    assert resolve_level("simple", "easy", 1) == 1  # consistent pair is fine


@pytest.mark.parametrize("kwargs, match", [
    ({"challenge": "zork"}, "challenge must be one of"),
    ({"challenge": "cooking", "difficulty": "extreme"}, "difficulty must be one of"),
    ({"challenge": "cooking", "level": 9}, r"level must be an int in \[1, 5\]"),
    ({"challenge": "simple", "difficulty": "hard", "level": 1}, "not both"),
])
def test_bad_levels_are_explained(kwargs, match):
    with pytest.raises(ValueError, match=match):
        resolve_level(kwargs["challenge"], kwargs.get("difficulty"), kwargs.get("level"))


def test_split_seed_ranges_are_disjoint():
    ranges = [set(split_seeds(split)) for split in SPLITS]
    assert all(not (a & b) for i, a in enumerate(ranges) for b in ranges[i + 1:])
    with pytest.raises(ValueError, match="split must be one of"):
        split_seeds("dev")


def test_settings_follow_the_split_and_the_digest_tracks_them():
    train, test = GameSpec("cooking", 3, "train", 5), GameSpec("cooking", 3, "test", 5)
    assert train.settings()["split"] == "train" and test.settings()["split"] == "test"
    assert GameSpec("simple", 1, "test", 0).settings()["test"] is True
    assert train.digest() != test.digest() and train.digest() == GameSpec("cooking", 3, "train", 5).digest()
    assert GameSpec.from_dict(train.to_dict()) == train
