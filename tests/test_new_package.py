"""``agentgym new`` makes a package others can install: scaffold → ``pip install -e`` → ``agentgym bench`` on a
one-entry suite naming the new id → ``agentgym export`` of that store. And ``module:id`` is accepted where ids are.

The package is installed into a throwaway venv that sees this checkout's environment through a ``.pth`` file (so
no dependency is downloaded and the project's own ``.venv`` is never changed); its ``agentgym.envs`` entry point
is all that makes the id known to suites, the runner's workers and the exporter.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentgym_envs.core.errors import UnknownEnvError
from agentgym_envs.plugins import resolve_id
from leaderboards.errors import SuiteError
from leaderboards.suite import load_suite

CLI = ["-m", "agentgym_envs.cli.main"]


def _throwaway_venv(root: Path) -> Path:
    """A venv whose ``site-packages`` also reads this interpreter's (``.venv``'s, its own ``.pth`` files included)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    parents = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(own) / "agentgym_parent_env.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in parents))
    return python


def _run(python: Path, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(python), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_new_then_pip_install_then_bench_and_export(tmp_path):
    python = _throwaway_venv(tmp_path / "venv")
    work = tmp_path / "work"  # not the repo: nothing here is importable unless installed
    work.mkdir()
    new = _run(python, *CLI, "new", "counter_env", cwd=work)
    assert new.returncode == 0, new.stdout + new.stderr
    project = work / "counter_env"
    pyproject = (project / "pyproject.toml").read_text()
    assert '[project.entry-points."agentgym.envs"]' in pyproject and 'counter_env = "counter_env"' in pyproject
    assert "check_env" in (project / "tests" / "test_counter_env.py").read_text()
    assert "agentgym/CounterEnv-v0" in (project / "README.md").read_text()

    # Not installed yet: the bare id is unknown to a suite (this is what the entry point changes).
    suite = work / "one.yaml"
    suite.write_text(yaml.safe_dump({"name": "mine", "version": 1, "entries": [{"env": "agentgym/CounterEnv-v0", "tasks": 2}]}))
    before = _run(python, *CLI, "bench", "--suite", str(suite), "--policy", "expert", "--store", "s.sqlite", cwd=work)
    assert before.returncode != 0 and "CounterEnv" in before.stdout + before.stderr

    install = _run(python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-e",
                   str(project), cwd=work, timeout=150)
    assert install.returncode == 0, install.stdout + install.stderr
    bench = _run(python, *CLI, "bench", "--suite", str(suite), "--policy", "expert", "--store", "s.sqlite", "--quiet",
                 cwd=work)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    export = _run(python, *CLI, "export", "--store", "s.sqlite", "--out", "out", "--quiet", cwd=work)
    assert export.returncode == 0, export.stdout + export.stderr
    records = [json.loads(line) for line in (work / "out" / "trajectories.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["env_id"] == "agentgym/CounterEnv-v0" and r["outcome"]["won"] for r in records), records
    # The scaffold's own test (check_env and the expert) passes against the installed package.
    tests = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=project, timeout=150)
    assert tests.returncode == 0 and "2 passed" in tests.stdout, tests.stdout + tests.stderr
    # module:id in a suite names an installed env package: accepted, stored as the bare id.
    suite.write_text(yaml.safe_dump({"name": "mine", "version": 1,
                                     "entries": [{"env": "counter_env:agentgym/CounterEnv-v0", "tasks": 1}]}))
    again = _run(python, *CLI, "bench", "--suite", str(suite), "--policy", "random", "--store", "s2.sqlite", "--quiet",
                 cwd=work)
    assert again.returncode == 0, again.stdout + again.stderr


def test_module_id_is_resolved_where_an_id_is_taken_and_a_suite_may_import_only_env_packages(tmp_path):
    assert resolve_id("agentgym/Maze-Easy-v0") == "agentgym/Maze-Easy-v0"
    assert resolve_id("agentgym_envs.examples.maze:agentgym/Maze-Easy-v0") == "agentgym/Maze-Easy-v0"
    with pytest.raises(UnknownEnvError, match="no module named 'no_such_env_pkg'"):
        resolve_id("no_such_env_pkg:agentgym/Nope-v0")
    with pytest.raises(UnknownEnvError, match="expected an env id or module:env_id"):
        resolve_id(":agentgym/Maze-v0")
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump({"name": "s", "version": 1, "entries": [{"env": "meta_envs:agentgym/Maze-Easy-v0"}]}))
    assert [e.env_id for e in load_suite(str(ok)).entries] == ["agentgym/Maze-Easy-v0"]
    hostile = tmp_path / "hostile.yaml"  # a suite someone else wrote must not choose a module to import
    hostile.write_text(yaml.safe_dump({"name": "s", "version": 1, "entries": [{"env": "antigravity:agentgym/Maze-v0"}]}))
    with pytest.raises(SuiteError, match="not an installed agentgym env package"):
        load_suite(str(hostile))
    assert "antigravity" not in sys.modules


def test_check_and_play_take_module_ids(tmp_path):
    from agentgym_envs.cli.main import main

    assert main(["new", "dot_env", "--dir", str(tmp_path / "proj")]) == 0
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "proj" / "src")}  # not installed: its src on the path
    check = subprocess.run([sys.executable, *CLI, "check", "dot_env:agentgym/DotEnv-v0"], capture_output=True,
                           text=True, timeout=300, cwd=tmp_path, env=env)
    assert check.returncode == 0 and "verdict: PASSED" in check.stdout, check.stdout + check.stderr
    play = subprocess.run([sys.executable, *CLI, "play", "dot_env:agentgym/DotEnv-v0"], input="add 1\n:quit\n",
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert play.returncode == 0 and "The number is 1." in play.stdout, play.stdout + play.stderr
