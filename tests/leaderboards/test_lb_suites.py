"""Suites: the shipped files load, core covers every registered family, and bad files fail with a clear reason."""

from __future__ import annotations

import pytest
from lb_helpers import write_suite

from agentgym_envs.registration import catalogue
from leaderboards.errors import SuiteError
from leaderboards.suite import load_suite, suite_names


@pytest.mark.parametrize("name", suite_names())
def test_shipped_suites_load_with_versions_and_stable_fingerprints(name):
    suite = load_suite(name)
    assert suite.version >= 1 and suite.entries and suite.episodes > 0
    assert load_suite(name).fingerprint == suite.fingerprint
    assert len({e.key for e in suite.entries}) == len(suite.entries)


def test_core_covers_every_registered_family():
    families = {e.family for e in catalogue() if not e.multi_agent}
    covered = {e.family for e in load_suite("core").entries}
    missing = sorted(families - covered)
    assert not missing, (f"families {missing} are registered but not in the core suite: add a line '- <family>' under "
                         "'families:' in leaderboards/suites/core.yaml (with a <family>.yaml suite) and bump its version")


def test_core_has_puzzles_and_scripted_opponents_with_fixed_counts():
    entries = {e.env_id: e for e in load_suite("core").entries}
    assert "agentgym/Wordle-v0" in entries and "agentgym/TicTacToe-VsScripted-v0" in entries
    assert all(e.repeats == 2 and e.tasks == (9 if "Terminal" in e.env_id else 10) for e in entries.values())
    assert entries["agentgym/Household-v0"].kwargs == {"split": "valid_unseen"}


def test_including_a_family_is_one_line_with_overrides(tmp_path):
    path = write_suite(tmp_path / "mine.yaml", [], families=["examples"], override={"tasks": 3, "repeats": 1})
    suite = load_suite(path)
    assert [e.env_id for e in suite.entries] == ["agentgym/Maze-v0", "agentgym/GuessNumber-v0"]
    assert all(e.tasks == 3 and e.repeats == 1 and e.seed == 10000 for e in suite.entries)


def test_step_limit_defaults_to_the_registered_one_and_fingerprint_tracks_changes(tmp_path):
    a = load_suite(write_suite(tmp_path / "a.yaml", [{"env": "agentgym/Maze-Easy-v0"}]))
    b = load_suite(write_suite(tmp_path / "b.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 6}]))
    assert a.entries[0].max_steps == 30
    assert a.fingerprint != b.fingerprint


@pytest.mark.parametrize("entries, extra, match", [
    ([{"env": "agentgym/Maze-Esy-v0"}], {}, "Did you mean agentgym/Maze-Easy-v0"),
    ([{"env": "agentgym/Maze-v0", "taks": 3}], {}, "unknown key 'taks'. Did you mean 'tasks'"),
    ([{"env": "agentgym/Maze-v0", "tasks": 0}], {}, "tasks must be an integer >= 1"),
    ([{"env": "agentgym/Maze-v0", "protocol": "xml"}], {}, "protocol must be one of"),
    ([{"env": "agentgym/TicTacToe-v0"}], {}, "multi-agent env"),
    ([{"env": "agentgym/Maze-v0"}, {"env": "agentgym/Maze-v0"}], {}, "appears twice"),
    ([], {"families": ["gamez"]}, "Did you mean games"),
])
def test_bad_suites_say_what_is_wrong(tmp_path, entries, extra, match):
    with pytest.raises(SuiteError, match=match):
        load_suite(write_suite(tmp_path / "bad.yaml", entries, **extra))


def test_unknown_suite_name_lists_the_shipped_ones():
    with pytest.raises(SuiteError, match="expected one of .*core.*smoke"):
        load_suite("cor")


def test_a_folder_named_like_a_suite_does_not_shadow_it(tmp_path, monkeypatch):
    """A checkout has an ``examples/`` folder and a shipped ``examples`` suite: run from the repo root, the name
    was read as that folder ("Is a directory") and every suite including it failed to load."""
    (tmp_path / "examples").mkdir()
    (tmp_path / "core").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_suite("examples").name == "examples"
    assert load_suite("core").name == "core"
