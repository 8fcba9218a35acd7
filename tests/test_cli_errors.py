"""Issue 34 §2: a user's mistake is one line on stderr saying what is wrong and what to do, exit status 2 and no
traceback; a bug still prints its traceback (``--debug`` shows one for user errors too).

Each case runs the installed ``agentgym`` script (or ``python -m trainer.serve``) as a subprocess, from a folder
outside the checkout, as a person would."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

AGENTGYM = str(Path(sys.executable).with_name("agentgym"))


def run(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([AGENTGYM, *args], capture_output=True, text=True, cwd=cwd, input=stdin, timeout=300)


def assert_one_line(out: subprocess.CompletedProcess, *words: str) -> str:
    """Status 2, exactly one line on stderr naming ``words``, no traceback anywhere."""
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert len(lines) == 1 and "Traceback" not in out.stderr + out.stdout, out.stderr
    assert all(w in lines[0] for w in words), (words, lines[0])
    return lines[0]


@pytest.mark.parametrize("command", [["play"], ["baselines"], ["check"], ["gateway", "--tiny", "--env"]])
def test_an_unknown_env_id_is_one_line_with_a_suggestion(command, tmp_path):
    out = run(*command, "agentgym/Maze-v9", cwd=tmp_path)
    assert_one_line(out, "'agentgym/Maze-v9'", "Did you mean agentgym/Maze-v0")
    assert out.stdout == ""  # check used to print the same error for each of its 11 checks


def test_an_unknown_protocol_is_one_line_with_a_suggestion(tmp_path):
    out = run("play", "agentgym/Maze-Easy-v0", "--protocol", "reactt", cwd=tmp_path)
    assert_one_line(out, "unknown action protocol 'reactt'", "did you mean 'react'")


def test_a_missing_config_file_is_one_line_pointing_at_the_recipes(tmp_path):
    out = run("train", "nope.yaml", cwd=tmp_path)
    assert_one_line(out, "'nope.yaml' does not exist", "agentgym configs")


def test_a_missing_model_directory_is_one_line(tmp_path):
    assert_one_line(run("train", "-", "policy.path=./no-such-model", cwd=tmp_path), "no-such-model", "downloads")
    assert_one_line(run("gateway", "--hf", "./no-such-model", cwd=tmp_path), "no such directory", "--tiny")
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    serve = subprocess.run([sys.executable, "-m", "trainer.serve", "--hf", str(not_a_model)], capture_output=True,
                           text=True, cwd=tmp_path, timeout=300)
    assert_one_line(serve, "has no config.json")


def test_a_port_in_use_is_refused_before_the_model_loads(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        start = time.monotonic()
        gateway = run("gateway", "--tiny", "--port", port, cwd=tmp_path)
        serve = subprocess.run([sys.executable, "-m", "trainer.serve", "--tiny", "--port", port], capture_output=True,
                               text=True, cwd=tmp_path, timeout=300)
        elapsed = time.monotonic() - start
    assert_one_line(gateway, f"port {port}", "already in use", "--port")
    assert_one_line(serve, f"port {port}", "already in use")
    assert "serving" not in serve.stdout and "gateway at" not in gateway.stdout
    assert elapsed < 60, f"the port should be checked before the model is built ({elapsed:.0f}s)"


def test_a_missing_extra_names_the_extra():
    """The real missing-extra runs are in tests/test_wheel.py (a venv without bm25s); here, the mapping."""
    from agentgym_envs.cli.errors import user_error_line
    from agentgym_envs.extras import MissingExtra

    err = ModuleNotFoundError("No module named 'torch'", name="torch")
    assert "pip install 'agentgym[train]'" in user_error_line(err, "trainer.cli.train")
    assert "'leaderboards'" in user_error_line(ModuleNotFoundError("x", name="yaml"), "leaderboards.cli.bench")
    assert user_error_line(ModuleNotFoundError("x", name="agentgym_envs.nope"), "trainer.cli.train") is None
    line = user_error_line(MissingExtra("agentgym/Search-v0", "search", ["bm25s"]), "agentgym_envs.cli.check")
    assert line == "agentgym/Search-v0 needs the 'search' extra (missing: bm25s): pip install 'agentgym[search]'"


def test_a_bug_keeps_its_traceback_and_debug_shows_user_errors_in_full(tmp_path):
    (tmp_path / "boom.py").write_text("raise RuntimeError('a bug in an env module')\n")
    bug = run("play", "boom:agentgym/Boom-v0", cwd=tmp_path)
    assert bug.returncode == 1 and "Traceback" in bug.stderr and "a bug in an env module" in bug.stderr, bug.stderr
    debug = run("--debug", "play", "agentgym/Maze-v9", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "UnknownEnvError" in debug.stderr, debug.stderr


def test_configs_copy_refuses_to_overwrite_and_names_the_recipes(tmp_path):
    assert_one_line(run("configs", "copy", "nope", cwd=tmp_path), "no recipe named 'nope'", "household_gigpo")
    first = run("configs", "copy", "household_gigpo", cwd=tmp_path)
    assert first.returncode == 0 and (tmp_path / "household_gigpo.yaml").read_text().startswith("# GiGPO"), first
    assert_one_line(run("configs", "copy", "household_gigpo", cwd=tmp_path), "exists", "--force")
