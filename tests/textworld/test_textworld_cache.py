"""The game cache: generated once, loaded after; atomic and safe when processes race for the same game."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

pytest.importorskip("textworld")

from agentgym_envs.games.textworld import generate  # noqa: E402
from agentgym_envs.games.textworld.cache import GameCache, default_cache_dir  # noqa: E402
from agentgym_envs.games.textworld.challenges import GENERATOR_VERSION, GameSpec  # noqa: E402

#: Quick to generate (~1 s), and a game textworld builds differently under different PYTHONHASHSEEDs.
SPEC = GameSpec("coin_collector", 3, "train", 3)


class FakeGenerator:
    """Writes placeholder files instead of a game, counting calls (and optionally taking its time)."""

    def __init__(self, delay: float = 0.0, files: tuple[str, ...] = ("game.z8", "game.json", "meta.json")):
        self.calls, self.delay, self.files = 0, delay, files

    def __call__(self, spec: GameSpec, out_dir: Path) -> None:
        self.calls += 1
        time.sleep(self.delay)
        for name in self.files:
            (out_dir / name).write_text(json.dumps(spec.to_dict()))


def test_default_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path / "ag"))
    assert default_cache_dir() == tmp_path / "ag" / "textworld"
    monkeypatch.delenv("AGENTGYM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "agentgym" / "textworld"


def test_key_holds_versions_and_parameters(tmp_path):
    cache = GameCache(tmp_path, generator=FakeGenerator())
    path = cache.game_dir(SPEC).relative_to(tmp_path).parts
    assert path[0].startswith("tw") and path[0].endswith(f"-gen{GENERATOR_VERSION}")
    assert path[1:3] == ("coin_collector", "level3-train") and path[3].startswith("seed3-")
    assert cache.game_dir(GameSpec("coin_collector", 4, "train", 3)) != cache.game_dir(SPEC)


def test_second_use_loads_without_generating(tmp_path):
    fake = FakeGenerator()
    cache = GameCache(tmp_path, generator=fake)
    game = cache.get(SPEC)
    mtime = game.stat().st_mtime_ns
    assert fake.calls == 1 and cache.contains(SPEC)
    again = GameCache(tmp_path, generator=FakeGenerator(files=()))  # would fail if it were called
    assert again.get(SPEC) == game and again.ensure(SPEC) is False
    assert fake.calls == 1 and game.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("generator", [FakeGenerator(files=("game.z8",)), "raises"])
def test_failed_generation_leaves_nothing_behind(tmp_path, generator):
    def boom(spec, out_dir):
        (out_dir / "game.z8").write_text("half")
        raise generate.GenerationError("textworld exploded")

    cache = GameCache(tmp_path, generator=boom if generator == "raises" else generator)
    with pytest.raises(generate.GenerationError):
        cache.get(SPEC)
    leftovers = [p.name for p in cache.game_dir(SPEC).parent.iterdir() if not p.name.endswith(".lock")]
    assert leftovers == [] and not cache.contains(SPEC)


def test_threads_wanting_one_game_generate_it_once(tmp_path):
    fake = FakeGenerator(delay=0.3)
    cache = GameCache(tmp_path, generator=fake)
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(cache.ensure(SPEC))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake.calls == 1 and sorted(results) == [False, False, True]


_CHILD = """
import json, sys
from agentgym_envs.games.textworld.cache import GameCache
from agentgym_envs.games.textworld.challenges import GameSpec
cache = GameCache(sys.argv[1])
spec = GameSpec.from_dict(json.loads(sys.argv[2]))
generated = cache.ensure(spec)
print(json.dumps({"generated": generated, "path": str(cache.get(spec))}))
"""


def test_two_processes_racing_for_one_game_get_one_valid_game(tmp_path):
    """Two processes share a cache, a third uses its own: one generation there, and the same game everywhere
    (the worker's fixed hash seed makes a spec's game identical across processes)."""
    shared, separate = tmp_path / "shared", tmp_path / "separate"
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(root), json.dumps(SPEC.to_dict())],
                              stdout=subprocess.PIPE, text=True) for root in (shared, shared, separate)]
    outs = [json.loads(p.communicate(timeout=180)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(o["generated"] for o in outs[:2]) == [False, True] and outs[0]["path"] == outs[1]["path"]
    game_dir = Path(outs[0]["path"]).parent
    assert sorted(p.name for p in game_dir.iterdir()) == ["game.json", "game.z8", "meta.json"]
    assert [p.name for p in game_dir.parent.iterdir() if p.name.endswith(".tmp")] == []
    other = Path(outs[2]["path"]).parent
    assert (game_dir / "game.json").read_bytes() == (other / "game.json").read_bytes()
    _assert_walkthrough_wins(game_dir / "game.z8")


def _assert_walkthrough_wins(game_file: Path) -> None:
    import textworld

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # jericho: "not fully supported" (it knows only commercial games)
        env = textworld.start(str(game_file), request_infos=textworld.EnvInfos(won=True, game=True))
    state = env.reset()
    for command in state["game"].metadata["walkthrough"]:
        state, _, _ = env.step(command)
    env.close()
    assert state["won"]
