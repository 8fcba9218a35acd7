"""Every registered puzzle: the expert wins every sampled episode, random play is measured, any action
string is safe, and snapshots restore exactly (also mid-game and before Minesweeper lays its mines)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym_envs
from agentgym_envs.checker import same
from agentgym_envs.games.register import PUZZLE_IDS

GAME_IDS = list(PUZZLE_IDS)
#: Episodes per id for the expert test; the slow ids get fewer so that the folder stays fast.
EXPERT_EPISODES = {"agentgym/Sudoku-9x9-Hard-v0": 8, "agentgym/Mastermind-Hard-v0": 8, "agentgym/TreeSearch-Hard-v0": 10}
RANDOM_EPISODES = 30


def play(env_id: str, seed: int, policy: str, rng: np.random.Generator | None = None) -> tuple[bool, int, bool]:
    """One episode under the registered time limit: ``(won, steps, every action valid)``."""
    env = gymnasium.make(env_id)
    env.reset(seed=seed)
    steps, all_valid = 0, True
    while True:
        base = env.unwrapped
        action = base.expert_action() if policy == "expert" else base.random_action(rng)
        _, _, terminated, truncated, info = env.step(action)
        steps, all_valid = steps + 1, all_valid and info["action_valid"]
        if terminated or truncated:
            return info["won"], steps, all_valid


def test_every_puzzle_is_registered_in_the_games_family():
    assert set(GAME_IDS) <= set(agentgym_envs.env_ids("games"))
    stems = {i.removeprefix("agentgym/").split("-")[0] for i in GAME_IDS}
    assert stems == {"Wordle", "Mastermind", "Sudoku", "Minesweeper", "Countdown", "Hanoi", "TreeSearch", "TwentyQuestions"}
    assert {"agentgym/Sudoku-4x4-v0", "agentgym/Sudoku-9x9-v0", "agentgym/Countdown-Stepwise-v0"} <= set(GAME_IDS)


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_expert_wins_every_sampled_episode(env_id):
    for seed in range(EXPERT_EPISODES.get(env_id, 20)):
        won, steps, all_valid = play(env_id, seed, "expert")
        assert won and all_valid, f"{env_id} seed {seed}: expert won={won} after {steps} steps, all valid={all_valid}"


def test_random_play_success_rates(capsys):
    """Random play (each env's ``random_action``: uniform over well-formed, rule-abiding moves) is measured."""
    rows = []
    for env_id in GAME_IDS:
        rng = np.random.default_rng(0)
        episodes = RANDOM_EPISODES // 3 if "9x9" in env_id else RANDOM_EPISODES
        results = [play(env_id, 1000 + seed, "random", rng) for seed in range(episodes)]
        rate = float(np.mean([won for won, _, _ in results]))
        rows.append((env_id, episodes, rate, float(np.mean([steps for _, steps, _ in results]))))
        assert 0.0 <= rate < 1.0, f"{env_id}: random play should not always win (got {rate:.2f})"
    with capsys.disabled():
        print("\nrandom play success (uniform random legal moves)")
        for env_id, episodes, rate, steps in rows:
            print(f"  {env_id:38} {rate:5.2f} over {episodes:2} episodes, {steps:6.1f} steps on average")


#: Strings that look like each game's grammar, with out-of-range and huge values, plus arbitrary text.
near_miss = st.builds(
    lambda template, a, b, c: template.format(a=a, b=b, c=c),
    st.sampled_from([
        "guess {a}{b}{c}", "{a}{b}{c}{a}", "guess crane", "place {a} at r{b}c{c}", "r{a}c{b}={c}", "clear r{a}c{b}",
        "reveal {a} {b}", "flag {a} {b}", "unflag {a} {b}", "{a} * {b}", "{a} / {b}", "({a} + {b}) * {c}", "undo",
        "move disk from A to C", "A->B", "C->A", "{a}", "back", "Is it an animal?", "guess dog", "guess {a}",
    ]),
    st.integers(-3, 10**6), st.integers(-3, 12), st.integers(0, 99),
)
actions = st.lists(st.one_of(near_miss, st.text(max_size=40)), min_size=1, max_size=12)


@pytest.mark.parametrize("env_id", GAME_IDS)
@given(seed=st.integers(0, 2**16), batch=actions)
@settings(max_examples=12)
def test_any_action_strings_are_safe(env_id, seed, batch):
    env = gymnasium.make(env_id)
    env.reset(seed=seed)
    low, high = env.unwrapped.reward_bounds
    for action in batch:
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and low <= reward <= high and isinstance(info["action_valid"], bool)
        assert info["action_valid"] or info["parse_error"]
        if terminated or truncated:
            env.reset(seed=seed)


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_two_envs_with_one_seed_stay_in_lockstep_under_random_play(env_id):
    a, b = gymnasium.make(env_id), gymnasium.make(env_id)
    assert same(a.reset(seed=11), b.reset(seed=11))
    rng = np.random.default_rng(11)
    for i in range(25):
        action = a.unwrapped.random_action(rng) if i % 4 else "not a move"
        out_a, out_b = a.step(action), b.step(action)
        assert same(out_a, out_b), f"{env_id}: diverged at step {i} on {action!r}"
        if out_a[2] or out_a[3]:
            assert same(a.reset(seed=i), b.reset(seed=i))


@pytest.mark.parametrize("env_id", GAME_IDS)
def test_snapshot_restores_random_play_exactly(env_id):
    """Snapshot right after reset (before Minesweeper lays mines) and mid-game; replays must match."""
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=7)
    rng = np.random.default_rng(7)
    for split in (0, 3):
        for _ in range(split):
            if env.step(env.random_action(rng))[2]:
                env.reset(seed=7)
        snapshot = env.get_state()
        plan = []
        outcomes = []
        for _ in range(6):
            plan.append(env.random_action(rng))
            outcomes.append(env.step(plan[-1]))
        env.set_state(snapshot)
        assert same(outcomes, [env.step(a) for a in plan]), f"{env_id}: replay after set_state differs"
        env.set_state(snapshot)


@pytest.mark.parametrize("env_id", ["agentgym/Wordle-v0", "agentgym/Sudoku-4x4-v0", "agentgym/TreeSearch-v0"])
def test_unknown_difficulty_is_a_clear_error(env_id):
    with pytest.raises(ValueError, match=r"difficulty must be one of \['easy', 'hard', 'medium'\], got 'impossible'"):
        gymnasium.make(env_id, difficulty="impossible")


def test_make_works_without_importing_the_package_first():
    env = gymnasium.make("agentgym_envs:agentgym/Hanoi-Easy-v0")
    obs, info = env.reset(seed=0)
    assert "tower of 3 disks" in obs and info["valid_actions"]


def test_doctests_in_the_game_modules_pass():
    import agentgym_envs.games as games

    names = [m.name for m in pkgutil.walk_packages(games.__path__, games.__name__ + ".")]
    failed = sum(doctest.testmod(importlib.import_module(name)).failed for name in names)
    assert failed == 0 and len(names) > 20
