"""TextWorldEnv on real generated games: walkthroughs win, the expert is optimal, the cache is reused,
bad input never reaches (or breaks) the interpreter, snapshots replay, and check_env passes.

All tests share one temporary cache with one easy game per challenge (~1-2 s each to generate).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("textworld")

import gymnasium  # noqa: E402

from agentgym_envs.checker import check_env, same  # noqa: E402
from agentgym_envs.core.errors import SnapshotError  # noqa: E402
from agentgym_envs.fuzz import hostile_actions  # noqa: E402
from agentgym_envs.games.textworld import generate  # noqa: E402
from agentgym_envs.games.textworld.tw_env import TextWorldEnv  # noqa: E402

CHALLENGE_NAMES = ("cooking", "treasure_hunter", "coin_collector", "simple")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("textworld-cache")


@pytest.fixture
def make(cache_dir):
    envs: list[TextWorldEnv] = []

    def _make(challenge: str = "cooking", **kwargs) -> TextWorldEnv:
        kwargs = {"difficulty": "easy", "num_games": 1, "cache_dir": cache_dir, **kwargs}
        envs.append(TextWorldEnv(challenge, **kwargs))
        return envs[-1]

    yield _make
    for env in envs:
        env.close()


@pytest.mark.parametrize("challenge", CHALLENGE_NAMES)
def test_walkthrough_wins_and_expert_is_optimal(make, challenge):
    env = make(challenge)
    _, info = env.reset(seed=0)
    walkthrough = env.walkthrough
    assert walkthrough and info["instruction"] and info["valid_actions"]
    total = 0.0
    for command in walkthrough:
        _, reward, terminated, truncated, info = env.step(command)
        assert info["action_valid"], info["parse_error"]
        total += reward
    assert terminated and not truncated and info["won"] and info["score"] == 1.0 and total == pytest.approx(1.0)
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        *_, terminated, _, info = env.step(env.expert_action())
        if terminated:
            break
    assert info["won"] and steps <= len(walkthrough) and info["metrics"]["steps_to_win"] == 0


def test_second_use_loads_from_the_cache(make, monkeypatch):
    env = make("cooking")
    env.reset(seed=0)
    game = env.cache.get(env.task.data["spec"])
    mtime = game.stat().st_mtime_ns

    def no_generation(spec, out_dir):
        raise AssertionError(f"{spec} was generated again")

    monkeypatch.setattr(generate, "generate_in_worker", no_generation)
    obs, info = make("cooking").reset(seed=0)
    assert info["infra_error"] is None and "hungry" in obs.lower()
    assert game.stat().st_mtime_ns == mtime


def test_same_seed_and_actions_give_identical_rollouts(make):
    a, b = make("cooking"), make("cooking")
    assert same(a.reset(seed=3), b.reset(seed=3))
    rng = np.random.default_rng(0)
    for _ in range(15):
        actions = a.valid_actions()
        action = actions[int(rng.integers(len(actions)))]
        out_a, out_b = a.step(action), b.step(action)
        assert same(out_a, out_b)
        if out_a[2]:
            break


def test_equal_states_share_a_state_key(make):
    env = make("coin_collector")
    _, info = env.reset(seed=0)
    start_key = info["state_key"]
    go = next(a for a in env.valid_actions() if a.startswith("go "))
    _, _, _, _, moved = env.step(go)
    _, _, _, _, back = env.step("go " + OPPOSITE[go.split()[1]])
    assert moved["state_key"] != start_key and back["state_key"] == start_key


@pytest.mark.parametrize("action", ["\x00abc", "\ud800", "restart", "quit", "save", "script", "tw-trace-actions",
                                    "look. inventory", "look then inventory", "x" * 300, "", "   "])
def test_dangerous_input_is_refused_before_the_interpreter(make, action):
    env = make("cooking")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not info["action_valid"] and info["parse_error"] and reward == 0.0 and not (terminated or truncated)
    assert info["metrics"]["moves"] == 0 and env.step("look")[4]["action_valid"]


@pytest.mark.parametrize("action", ["look\rinventory", "look\ninventory", "look\r\ninventory\n"])
def test_line_breaks_cannot_queue_input_for_the_next_turn(make, action):
    env, reference = make("cooking"), make("cooking")
    env.reset(seed=0)
    reference.reset(seed=0)
    env.step(action)  # played as the single line "look inventory"
    assert env.step("look")[0] == reference.step("look")[0]


def test_hostile_battery_never_raises(make):
    env = make("simple")
    env.reset(seed=0)
    for action in hostile_actions():
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and -1.0 <= reward <= 1.0 and info["infra_error"] is None
        if terminated or truncated:
            env.reset(seed=0)


@settings(max_examples=60)
@given(st.one_of(st.text(max_size=200), st.sampled_from(["look", "take", "go", "open", "examine", "eat meal"])
                 .flatmap(lambda verb: st.text(alphabet="abcdefghij -'", max_size=30).map(lambda t: verb + " " + t))))
def test_fuzzed_text_never_raises(fuzz_env, text):
    obs, reward, terminated, truncated, info = fuzz_env.step(text)
    assert isinstance(obs, str) and -1.0 <= reward <= 1.0 and info["infra_error"] is None
    if terminated or truncated:
        fuzz_env.reset(seed=0)


@pytest.fixture(scope="module")
def fuzz_env(cache_dir):
    env = TextWorldEnv("treasure_hunter", difficulty="easy", num_games=1, cache_dir=cache_dir)
    env.reset(seed=0)
    yield env
    env.close()


def test_snapshot_replays_into_the_same_and_a_fresh_env(make):
    env = make("cooking")
    env.reset(seed=0)
    walkthrough = env.walkthrough
    half = len(walkthrough) // 2
    for command in walkthrough[:half]:
        env.step(command)
    snapshot = env.get_state()
    rest = [env.step(c) for c in walkthrough[half:]]
    assert rest[-1][4]["won"]
    env.set_state(snapshot)
    assert same(rest, [env.step(c) for c in walkthrough[half:]])
    fresh = make("cooking")
    fresh.set_state(snapshot)  # never reset: the snapshot brings the game
    assert same(rest, [fresh.step(c) for c in walkthrough[half:]])


def test_snapshot_of_another_challenge_is_refused(make):
    env = make("treasure_hunter")
    env.reset(seed=0)
    with pytest.raises(SnapshotError, match="TextWorld"):
        make("coin_collector").set_state(env.get_state())


def test_backend_failure_truncates_with_infra_error(make, monkeypatch):
    env = make("treasure_hunter")
    env.reset(seed=0)

    def crash(command):
        raise RuntimeError("interpreter died")

    monkeypatch.setattr(env._backend, "step", crash)
    obs, reward, terminated, truncated, info = env.step("look")
    assert truncated and not terminated and "interpreter died" in info["infra_error"]
    _, info = env.reset(seed=0)  # a new episode starts a new interpreter
    assert info["infra_error"] is None and env.step("look")[4]["action_valid"]


def test_generation_failure_is_an_infra_error(tmp_path, monkeypatch):
    def fail(spec, out_dir):
        raise generate.GenerationError("no inform7 today")

    monkeypatch.setattr(generate, "generate_in_worker", fail)
    env = TextWorldEnv("cooking", difficulty="easy", num_games=1, cache_dir=tmp_path)
    obs, info = env.reset(seed=0)
    assert "no inform7 today" in info["infra_error"]
    assert env.step("look")[3] is True


def test_tasks_ids_and_kwargs(cache_dir):
    env = TextWorldEnv("simple", difficulty="hard", split="test", cache_dir=cache_dir)
    assert env.num_tasks == 500 and env.level == 3
    assert env.tasks[7].id == "textworld/simple/level3/test/7"
    with pytest.raises(ValueError, match="num_games must be an int"):
        TextWorldEnv("simple", num_games=0)
    spec = gymnasium.spec("agentgym/TextWorld-CoinCollector-v0")
    assert spec.kwargs == {"challenge": "coin_collector"} and spec.max_episode_steps == 100


def test_check_env_passes(cache_dir):
    report = check_env(lambda: TextWorldEnv("cooking", difficulty="easy", num_games=1, cache_dir=cache_dir))
    assert report.passed, str(report)
