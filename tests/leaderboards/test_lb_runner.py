"""The runner: deterministic episodes, no duplicates on resume, infra failures retried and never scored."""

from __future__ import annotations

import sqlite3

import gymnasium
import pytest
from lb_helpers import FLAKY_ID, count, episode_rows, write_suite

from agentgym_envs.core import Step, TextEnv
from leaderboards.errors import RunAborted
from leaderboards.report import collect
from leaderboards.runner import BenchOptions, run_bench

QUIET = dict(progress=False)
MIXED = [{"env": "agentgym/Maze-Easy-v0", "tasks": 3, "repeats": 2},
         {"env": "agentgym/Wordle-Easy-v0", "tasks": 2, "max_steps": 6},
         {"env": "agentgym/Household-PickPlace-v0", "split": "valid_seen", "tasks": 2, "max_steps": 12,
          "protocol": "tags"}]


def _outcomes(store, run=None):
    return [(r["entry"], r["episode_index"], r["won"], r["steps"], r["return"]) for r in episode_rows(store, run)]


def test_expert_solves_and_steps_are_recorded(tmp_path):
    store = tmp_path / "r.sqlite"
    summary = run_bench(write_suite(tmp_path / "s.yaml", MIXED), "expert", store, BenchOptions(**QUIET))
    assert summary.played == 10 and summary.infra_failures == 0
    rows = episode_rows(store)
    assert all(r["won"] for r in rows)
    assert [r["task_index"] for r in rows if "Household" in r["entry"]] == [0, 1]
    with sqlite3.connect(store) as db:
        reply, action, valid = db.execute("SELECT reply, action, action_valid FROM steps WHERE action LIKE 'go %'"
                                          " OR action LIKE 'take %' LIMIT 1").fetchone()
    assert ("\nAction: " in reply or reply.startswith("<action>")) and valid == 1 and action in reply
    assert sum(r["steps"] for r in rows) == count(store, "steps")


def test_episodes_do_not_depend_on_workers_or_their_kind(tmp_path):
    suite = write_suite(tmp_path / "s.yaml", MIXED)
    run_bench(suite, "random", tmp_path / "a.sqlite", BenchOptions(workers=1, **QUIET))
    run_bench(suite, "random", tmp_path / "b.sqlite", BenchOptions(workers=2, pool="thread", **QUIET))
    assert _outcomes(tmp_path / "a.sqlite") == _outcomes(tmp_path / "b.sqlite")
    repeats = [r for r in episode_rows(tmp_path / "a.sqlite") if r["entry"] == "agentgym/Maze-Easy-v0"]
    assert repeats[0]["seed"] == repeats[1]["seed"] and repeats[0]["task"] == repeats[1]["task"]


def test_rerunning_only_plays_what_is_missing(tmp_path):
    suite, store = write_suite(tmp_path / "s.yaml", MIXED), tmp_path / "r.sqlite"
    first = run_bench(suite, "random", store, BenchOptions(**QUIET))
    reference = _outcomes(store)
    with sqlite3.connect(store) as db:  # as if the run had died before these three
        ids = [i for (i,) in db.execute("SELECT id FROM episodes ORDER BY id DESC LIMIT 3")]
        db.execute(f"DELETE FROM steps WHERE episode_id IN ({','.join('?' * 3)})", ids)
        db.execute(f"DELETE FROM episodes WHERE id IN ({','.join('?' * 3)})", ids)
    again = run_bench(suite, "random", store, BenchOptions(**QUIET))
    assert (first.played, again.already_stored, again.played) == (10, 7, 3)
    assert _outcomes(store) == reference
    assert run_bench(suite, "random", store, BenchOptions(**QUIET)).played == 0


@pytest.mark.parametrize("mode", ["info", "raise"])
def test_infra_failures_are_retried_recorded_apart_and_not_scored(tmp_path, flaky_attempts, mode):
    suite = write_suite(tmp_path / "s.yaml", [{"env": FLAKY_ID, "tasks": 4, "family": "testing",
                                              "kwargs": {"fail_times": 1, "mode": mode, "tag": mode}}])
    store = tmp_path / "r.sqlite"
    summary = run_bench(suite, "expert", store, BenchOptions(workers=2, pool="thread", **QUIET))
    assert (summary.played, summary.infra_failures, summary.gave_up) == (4, 4, [])
    assert all(r["won"] and r["attempts"] == 2 for r in episode_rows(store))
    with sqlite3.connect(store) as db:
        sources = db.execute("SELECT DISTINCT source, error FROM infra_errors").fetchall()
    assert [s for s, _ in sources] == ["env"] and "flaky backend" in sources[0][1]


def test_episodes_that_keep_failing_stay_unscored_and_are_retried_next_run(tmp_path, flaky_attempts):
    suite = write_suite(tmp_path / "s.yaml", [{"env": FLAKY_ID, "tasks": 2, "family": "testing",
                                              "kwargs": {"fail_times": 3, "tag": "stubborn"}},
                                             {"env": "agentgym/Maze-Easy-v0", "tasks": 2}])
    store = tmp_path / "r.sqlite"
    summary = run_bench(suite, "expert", store, BenchOptions(max_attempts=2, **QUIET))
    assert len(summary.gave_up) == 2 and summary.played == 2
    report = collect([store])[0].runs[0]
    assert "testing" not in report.families and report.unscored == 2 and report.overall[0] == 1.0
    retried = run_bench(suite, "expert", store, BenchOptions(max_attempts=2, **QUIET))
    assert retried.played == 2 and count(store, "episodes") == 4
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT MAX(attempt) FROM infra_errors").fetchone()[0] == 3


def test_a_run_stops_when_infrastructure_keeps_failing_and_keeps_its_results(tmp_path, flaky_attempts):
    good = [{"env": "agentgym/Maze-Easy-v0", "tasks": 3}]
    bad = [{"env": FLAKY_ID, "tasks": 6, "family": "testing", "kwargs": {"fail_times": 99, "tag": "down"}}]
    store = tmp_path / "r.sqlite"
    run_bench(write_suite(tmp_path / "s.yaml", good + bad, name="two"), "expert", store,
              BenchOptions(max_attempts=1, max_consecutive_infra=20, **QUIET))
    assert count(store, "episodes") == 3
    with pytest.raises(RunAborted, match="infrastructure failures in a row.*3 episodes stored.*are kept"):
        run_bench(write_suite(tmp_path / "s.yaml", good + bad, name="two"), "expert", store,
                  BenchOptions(max_attempts=5, max_consecutive_infra=3, **QUIET))
    assert count(store, "episodes") == 3


class _ScriptedReplies:
    """Replies in a fixed order, whatever the chat."""

    def __init__(self, replies):
        self.replies = list(replies)

    def act(self, batch, *, sampling):
        from agentgym_envs.policies import Completion

        return [Completion(self.replies.pop(0), finish_reason="stop")]


def test_step_records_carry_the_action_the_env_received_not_a_second_parse():
    """StepRecord.action is the wrapper's info["native_action"]: None for an unparseable reply and for one
    over the length limit (which would parse if read, but never reaches the env), else the native action."""
    from leaderboards.episode import make_env, play_episode
    from leaderboards.suite import Entry
    from agentgym_envs.policies import SamplingConfig

    entry = Entry("agentgym/Maze-Easy-v0", "examples", tasks=1, max_steps=4, protocol="tags")
    env = make_env(entry)
    over_long = "<action>look</action>" + " " * env.max_reply_chars
    assert env.protocol.parse(over_long).action == "look"
    replies = ["<action>look</action>", "no tags", over_long, "<action>fly</action>"]
    record = play_episode(entry, 0, env, _ScriptedReplies(replies), SamplingConfig())
    assert [(s.action, s.action_valid) for s in record.steps] == [
        ("look", True), (None, False), (None, False), ("fly", False)]  # "fly": parsed, reached the env, refused
    assert record.truncated and env.turns == 4


class _NoExpert(TextEnv):
    """An env with no scripted solver."""

    def _reset(self, options):
        return "Nothing to see.", {"instruction": "Say done."}

    def _step(self, action):
        return Step("Done.", terminated=True, won=False)


def test_expert_on_an_env_without_one_is_a_clear_error_and_keeps_results(tmp_path):
    if "agentgym/TestNoExpert-v0" not in gymnasium.registry:
        gymnasium.register("agentgym/TestNoExpert-v0", entry_point=_NoExpert, max_episode_steps=3)
    store = tmp_path / "r.sqlite"
    entries = [{"env": "agentgym/Maze-Easy-v0", "tasks": 2}, {"env": "agentgym/TestNoExpert-v0", "tasks": 2}]
    with pytest.raises(RunAborted, match="TestNoExpert-v0 has no expert_action"):
        run_bench(write_suite(tmp_path / "s.yaml", entries), "expert", store, BenchOptions(**QUIET))
    assert count(store, "episodes") == 2


def _needs_a_missing_package(**kwargs):
    import agentgym_no_such_package  # noqa: F401


def test_an_env_whose_package_is_missing_stops_the_run_at_once(tmp_path):
    if "agentgym/TestMissingPackage-v0" not in gymnasium.registry:
        gymnasium.register("agentgym/TestMissingPackage-v0", entry_point=_needs_a_missing_package)
    store = tmp_path / "r.sqlite"
    entries = [{"env": "agentgym/Maze-Easy-v0", "tasks": 1}, {"env": "agentgym/TestMissingPackage-v0", "tasks": 3}]
    with pytest.raises(RunAborted, match="cannot make agentgym/TestMissingPackage-v0: No module named"):
        run_bench(write_suite(tmp_path / "s.yaml", entries), "random", store, BenchOptions(**QUIET))
    assert count(store, "episodes") == 1 and count(store, "infra_errors") == 0
