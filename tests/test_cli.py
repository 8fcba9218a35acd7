"""The agentgym CLI end to end, as subprocesses: list, check, play through stdin, new → check → pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CLI = [sys.executable, "-m", "agentgym_envs.cli.main"]


def run(*args, cwd=None, stdin=None, timeout=300):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, input=stdin, timeout=timeout)


def test_list_shows_ids_and_descriptions():
    out = run("list")
    assert out.returncode == 0, out.stderr
    assert "agentgym/Maze-v0" in out.stdout and "reference env of the SDK" in out.stdout


def test_check_prints_verdict_and_exit_status():
    out = run("check", "agentgym/Maze-Easy-v0", "agentgym/GuessNumber-v0")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("verdict: PASSED") == 2 and "2 of 2 envs passed" in out.stdout
    bad = run("check", "agentgym/Maze-v9")  # a user's mistake: one line on stderr, status 2 (tests/test_cli_errors.py)
    assert bad.returncode == 2 and "Did you mean agentgym/Maze-v0" in bad.stderr and not bad.stdout, bad


def test_play_driven_through_stdin():
    # Seed 0 of Maze-Easy: the expert's hint, then the first listed action by number, then junk.
    out = run("play", "agentgym/Maze-Easy-v0", "--seed", "0", stdin=":hint\n1\nfly away\n:quit\n")
    assert out.returncode == 0, out.stderr
    assert "valid actions: 1) go east" in out.stdout
    assert "hint: go east" in out.stdout and "> go east" in out.stdout
    assert "Unknown command 'fly away'" in out.stdout and "valid False" in out.stdout


def test_play_to_the_end():
    import gymnasium

    env = gymnasium.make("agentgym_envs:agentgym/Maze-Easy-v0")
    env.reset(seed=0)
    moves, done = [], False
    while not done:
        moves.append(env.unwrapped.expert_action())
        done = env.step(moves[-1])[2]
    out = run("play", "agentgym/Maze-Easy-v0", "--seed", "0", stdin="\n".join(moves) + "\n:reset\n:quit\n")
    assert out.returncode == 0
    assert "Episode over: won, return 1" in out.stdout
    assert out.stdout.count("== Find the exit") == 2  # :reset starts a new episode


def test_play_shows_tools_and_accepts_protocols():
    out = run("play", "agentgym/GuessNumber-v0", "--protocol", "tool_calls",
              stdin='{"name": "guess", "arguments": {"number": 50}}\nnot json\n:quit\n')
    assert out.returncode == 0, out.stderr
    assert 'tools: ["give_up", "guess"]' in out.stdout and "50 is too" in out.stdout and "valid False" in out.stdout


def test_new_scaffold_passes_check_and_its_own_test(tmp_path: Path):
    out = run("new", "foo_env", "--dir", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "src" / "foo_env" / "env.py").exists() and (tmp_path / "tests" / "test_foo_env.py").exists()
    assert (tmp_path / "pyproject.toml").exists() and (tmp_path / "README.md").exists()  # an installable package
    check = run("check", "foo_env:agentgym/FooEnv-v0", cwd=tmp_path / "src")  # not installed: module:id from src
    assert check.returncode == 0 and "verdict: PASSED" in check.stdout, check.stdout + check.stderr
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_foo_env.py"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert tests.returncode == 0 and "2 passed" in tests.stdout, tests.stdout + tests.stderr
    again = run("new", "foo_env", "--dir", str(tmp_path))
    assert again.returncode == 1 and "already exist" in again.stdout
    assert run("new", "Bad-Name", "--dir", str(tmp_path)).returncode == 2


def test_baselines_table():
    out = run("baselines", "agentgym/Maze-Easy-v0", "--episodes", "5")
    assert out.returncode == 0, out.stderr
    assert "| agentgym/Maze-Easy-v0 | expert | 5 | 1.00 ± 0.00 |" in out.stdout
    assert "| agentgym/Maze-Easy-v0 | random | 5 |" in out.stdout


def test_unknown_subcommand_fails():
    out = run("frobnicate")
    assert out.returncode == 2


ALL_COMMANDS = ["list", "play", "check", "new", "baselines", "train", "quickstart", "gateway", "plot", "configs", "bench", "leaderboard", "export", "view", "selfplay", "skills"]


def test_every_part_registers_its_commands_and_each_answers_help():
    """The trainer's and the leaderboards' commands come from their own cli/ tables (entry points)."""
    top = run("--help")
    assert top.returncode == 0, top.stderr
    assert all(f"    {name}" in top.stdout for name in ALL_COMMANDS), top.stdout
    for name in ALL_COMMANDS:
        out = run(name, "--help")
        assert out.returncode == 0 and out.stdout.startswith(f"usage: agentgym {name}"), (name, out.stdout + out.stderr)


def test_a_stale_egg_info_in_the_working_directory_hides_no_command(tmp_path: Path):
    """A legacy build's ``agentgym.egg-info`` (no entry points) first on sys.path must not shadow the install."""
    stale = tmp_path / "agentgym.egg-info"
    stale.mkdir()
    (stale / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: agentgym\nVersion: 0.0.1\n")
    (stale / "entry_points.txt").write_text("[console_scripts]\nagentgym = agentgym_envs.cli.main:main\n")
    out = run("train", "--help", cwd=tmp_path)
    assert out.returncode == 0 and "usage: agentgym train" in out.stdout, out.stdout + out.stderr


def test_the_env_package_cli_imports_no_other_part():
    """The dependency points from trainer/leaderboards to agentgym_envs, never back (issue 16 §5)."""
    import ast

    for path in sorted((Path(__file__).parents[1] / "agentgym_envs" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] in ("trainer", "leaderboards") for n in names), (path.name, names)
        assert '"trainer.' not in path.read_text() and '"leaderboards.' not in path.read_text(), path.name


def test_two_parts_claiming_one_command_name_is_an_error():
    import pytest

    from agentgym_envs.cli.main import CommandRegistryError, _merge

    found, owner = {"train": ("trainer.cli.train", "help")}, {"train": "trainer.cli:COMMANDS"}
    with pytest.raises(CommandRegistryError, match="expected unique subcommand names, got 'train'"):
        _merge(found, owner, {"train": ("other.cli.train", "help")}, "other.cli:COMMANDS")
    with pytest.raises(CommandRegistryError, match="expected other.cli:COMMANDS to be a dict"):
        _merge(found, owner, ["train"], "other.cli:COMMANDS")
