"""The env-version policy (CHANGELOG.md, docs/leaderboards.md#env-versions): results record the env versions
they ran, and suites, stores and reports refuse to mix two versions of one env."""

from __future__ import annotations

import sqlite3
from importlib.metadata import version

import pytest
from lb_helpers import FLAKY_ID, FLAKY_V1_ID, agentgym, write_suite

from agentgym_envs.cli.main import main as agentgym_main
from leaderboards.errors import StoreError, SuiteError
from leaderboards.report import collect, markdown
from leaderboards.runner import BenchOptions, run_bench
from leaderboards.store import open_store
from leaderboards.suite import load_suite

QUIET = BenchOptions(progress=False)
TWO_VERSIONS = "two versions of one env"


def _one_line_refusal(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert TWO_VERSIONS in lines[0] and FLAKY_ID in lines[0] and FLAKY_V1_ID in lines[0], lines[0]
    return lines[0]


def test_a_suite_naming_two_versions_of_one_env_is_refused_at_load(tmp_path, capsys):
    path = write_suite(tmp_path / "mixed.yaml", [FLAKY_ID, {"env": FLAKY_V1_ID, "kwargs": {"tag": "x"}}])
    with pytest.raises(SuiteError, match=f"names {FLAKY_ID} and {FLAKY_V1_ID}, {TWO_VERSIONS}"):
        load_suite(path)
    # the CLI says so in one line, status 2, and creates no store
    store = tmp_path / "r.sqlite"
    assert agentgym_main(["bench", "--suite", str(path), "--policy", "expert", "--store", str(store), "--quiet"]) == 2
    _one_line_refusal(capsys.readouterr().err)
    assert not store.exists()


def test_ids_that_share_a_prefix_are_different_envs_not_versions(tmp_path):
    path = write_suite(tmp_path / "ok.yaml", ["agentgym/Maze-v0", "agentgym/Maze-Easy-v0"])
    assert [e.env_id for e in load_suite(path).entries] == ["agentgym/Maze-v0", "agentgym/Maze-Easy-v0"]


def test_a_run_records_its_env_versions_and_the_agentgym_release(tmp_path):
    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 2}], name="mini")
    run_bench(suite, "expert", tmp_path / "r.sqlite", QUIET)
    db = sqlite3.connect(tmp_path / "r.sqlite")
    rows = db.execute("SELECT env_id, env_name, env_version, agentgym_version FROM env_versions").fetchall()
    db.close()
    assert rows == [("agentgym/Maze-Easy-v0", "agentgym/Maze-Easy", 0, version("agentgym"))]
    (report,) = collect([tmp_path / "r.sqlite"])
    assert report.runs[0].releases == [version("agentgym")]
    text = markdown([report])
    assert "| agentgym |" in text and f"| {version('agentgym')} |" in text and "(-vN)" in text


def test_a_store_from_before_env_versions_opens_reports_and_gains_the_table_on_write(tmp_path):
    suite = write_suite(tmp_path / "s.yaml", [{"env": "agentgym/Maze-Easy-v0", "tasks": 1}], name="old")
    run_bench(suite, "expert", tmp_path / "r.sqlite", QUIET)
    db = sqlite3.connect(tmp_path / "r.sqlite")
    db.execute("DROP TABLE env_versions")  # as a 0.1.0 store is
    db.commit()
    db.close()
    (report,) = collect([tmp_path / "r.sqlite"])
    assert report.runs[0].releases == [] and report.runs[0].episodes == 1
    assert "| — |" in markdown([report])
    with open_store(tmp_path / "r.sqlite") as store:
        store.run("expert", "expert", load_suite(suite), {})  # resuming the run records what it runs now
        assert store.db.execute("SELECT COUNT(*) FROM env_versions").fetchone()[0] == 1


def test_a_store_refuses_another_version_of_an_env_within_one_suite_version(tmp_path, capsys):
    v0 = load_suite(write_suite(tmp_path / "v0.yaml", [FLAKY_ID], name="same"))
    v1_path = write_suite(tmp_path / "v1.yaml", [FLAKY_V1_ID], name="same")
    with open_store(tmp_path / "r.sqlite") as store:
        store.run("a", "expert", v0, {})
        with pytest.raises(StoreError, match=f"suite same v1 ran {FLAKY_ID} in run 'a' but {FLAKY_V1_ID} in this run"):
            store.run("b", "expert", load_suite(v1_path), {})
        assert [r.name for r in store.runs()] == ["a"]  # nothing written
        bumped = load_suite(write_suite(tmp_path / "v2.yaml", [FLAKY_V1_ID], name="same", version=2))
        assert store.run("b", "expert", bumped, {}).suite_version == 2  # the remedy: a new suite version
    code = agentgym_main(["bench", "--suite", str(v1_path), "--policy", "expert", "--store", str(tmp_path / "r.sqlite"),
                          "--run", "c", "--quiet"])
    assert code == 2
    assert "bump the suite's 'version'" in _one_line_refusal(capsys.readouterr().err)


def test_the_leaderboard_refuses_two_versions_of_one_env_in_one_table(tmp_path):
    for name, env_id in (("a", FLAKY_ID), ("b", FLAKY_V1_ID)):
        suite = load_suite(write_suite(tmp_path / f"{name}.yaml", [env_id], name="same"))
        with open_store(tmp_path / f"{name}.sqlite") as store:
            store.run(name, "expert", suite, {})
    stores = [tmp_path / "a.sqlite", tmp_path / "b.sqlite"]
    with pytest.raises(StoreError, match=TWO_VERSIONS):
        collect(stores)
    assert [s.title for s in collect(stores[:1])] == ["same v1"]  # each store alone is fine
    result = agentgym("leaderboard", "--store", str(stores[0]), "--store", str(stores[1]), "--out",
                      str(tmp_path / "site"), "--no-plots", "--no-viewer")
    assert result.returncode == 2 and result.stdout == ""
    assert "one --store each" in _one_line_refusal(result.stderr)
