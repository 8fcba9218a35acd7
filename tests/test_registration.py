"""Registration: ids work from a fresh process through gymnasium's module:id syntax, with helpful errors."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import pytest

import agentgym_envs
from agentgym_envs.core.errors import UnknownEnvError


def test_make_from_a_process_that_never_imported_the_package():
    code = ("import gymnasium, sys; assert 'agentgym_envs' not in sys.modules; "
            "e = gymnasium.make('agentgym_envs:agentgym/Maze-v0'); print(e.reset(seed=0)[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Find the exit of a 6×6 maze" in out.stdout


def test_import_then_make_and_catalogue():
    env = gymnasium.make("agentgym/Maze-Easy-v0")
    assert env.spec.max_episode_steps == 30
    ids = agentgym_envs.env_ids()
    assert {"agentgym/Maze-v0", "agentgym/GuessNumber-v0"} <= set(ids)
    assert all(e.description for e in agentgym_envs.catalogue())


def test_unknown_id_suggests_close_matches():
    with pytest.raises(UnknownEnvError, match="Did you mean agentgym/Maze-v0"):
        agentgym_envs.make("agentgym/Maze-v1")
    with pytest.raises(UnknownEnvError, match="agentgym list"):
        agentgym_envs.make("agentgym/Zzzzqqq-v0")


def test_make_is_the_one_constructor_for_play():
    """make(id, protocol=, max_turns=, **kwargs): the bare env, or the env behind the protocol wrapper with
    a reply cap (default: the registered limit); make kwargs reach the env; a cap without a protocol is refused."""
    from agentgym_envs.protocols import ActionProtocolWrapper
    from trainer.collect.episodes import PlaySpec

    bare = agentgym_envs.make("agentgym/Maze-Easy-v0", size=5)
    assert not isinstance(bare, ActionProtocolWrapper) and bare.unwrapped.size == 5
    default = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="react")
    assert isinstance(default, ActionProtocolWrapper) and default.max_turns == 30
    capped = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="plain", max_turns=2, max_episode_steps=7)
    assert capped.max_turns == 2 and capped.spec.max_episode_steps == 7
    capped.reset(seed=0)
    assert [capped.step("look")[3] for _ in range(2)] == [False, True]
    with pytest.raises(ValueError, match="expected protocol= as well"):
        agentgym_envs.make("agentgym/Maze-Easy-v0", max_turns=3)
    with pytest.raises(UnknownEnvError, match="Did you mean agentgym/Maze-v0"):
        PlaySpec("agentgym/Maze-v1").make()  # the trainer builds through make() too
    played = PlaySpec("agentgym/Maze-Easy-v0", {"size": 5}, protocol="tags", max_turns=4).make()
    while not isinstance(played, ActionProtocolWrapper):  # the trainer may add a task wrapper (SeededTasks) outside
        played = played.env
    assert (played.protocol.name, played.max_turns, played.unwrapped.size) == ("tags", 4, 5)


def test_bad_ids_are_refused():
    with pytest.raises(ValueError, match="agentgym/<Family>"):
        agentgym_envs.register_env("maze-v0", "x:y", family="x", description="x")


def test_import_is_light():
    code = "import sys, agentgym_envs; print(sorted(m for m in sys.modules if m.startswith('agentgym_envs.examples.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "['agentgym_envs.examples.register']", out.stdout + out.stderr


def test_env_plugins_are_loaded_and_a_stale_entry_is_skipped(monkeypatch):
    """``import agentgym_envs`` imports every ``agentgym.envs`` module (meta_envs registers its ids so);
    an entry naming an uninstalled package is skipped, a broken plugin module raises."""
    import sys
    from importlib.metadata import EntryPoint

    from agentgym_envs import plugins

    assert "meta_envs.register" in sys.modules
    stale = EntryPoint("gone", "no_such_package_xyz.register", plugins.ENV_GROUP)
    broken = EntryPoint("broken", "meta_envs.no_such_module", plugins.ENV_GROUP)
    monkeypatch.setattr(plugins, "registered_entries", lambda group: iter([stale]))
    assert plugins.load_env_plugins() == []
    monkeypatch.setattr(plugins, "registered_entries", lambda group: iter([broken]))
    with pytest.raises(ModuleNotFoundError):
        plugins.load_env_plugins()
