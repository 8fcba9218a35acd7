"""Each puzzle's native grammar: documented spellings are equivalent, and rule-breaking moves explain
themselves without ending the episode."""

from __future__ import annotations

import gymnasium
import pytest

from agentgym_envs.games.wordle import rules
from agentgym_envs.games.wordle.words import WORDS


def fresh(env_id: str, seed: int = 0, **kwargs):
    env = gymnasium.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    return env, obs, info


def key_after(env_id: str, actions: list[str], seed: int = 0) -> tuple[str, bool]:
    env, _, info = fresh(env_id, seed)
    for action in actions:
        _, _, _, _, info = env.step(action)
    return info["state_key"], info["action_valid"]


@pytest.mark.parametrize("env_id, spellings", [
    ("agentgym/Wordle-v0", ["guess crane", "CRANE", "Guess: crane.", "  crane\n"]),
    ("agentgym/Mastermind-v0", ["guess 1234", "1234", "1 2 3 4", "guess: 1,2,3,4"]),
    ("agentgym/Hanoi-v0", ["move disk from {s} to {t}", "{s}->{t}", "{s} {t}", "move {s} to {t}",
                           "Move the top disk from peg {s} to peg {t}."]),
    ("agentgym/TreeSearch-v0", ["2", "go 2", "choose 2", "child 2"]),
    ("agentgym/Countdown-Stepwise-v0", ["{a} * {b}", "{a} x {b}", "{a}*{b} = {p}", "{a} × {b}"]),
])
def test_documented_spellings_are_equivalent(env_id, spellings):
    env, _, _ = fresh(env_id)
    base = env.unwrapped
    fill = {}
    if hasattr(base, "goal") and hasattr(base, "position"):  # Hanoi: a legal first move
        source = next(i for i, stack in enumerate(base.position) if stack)
        fill = {"s": "ABC"[source], "t": "ABC"[(source + 1) % 3]}
    if hasattr(base, "pool"):  # Countdown: the two largest numbers
        a, b = base.pool[-1], base.pool[-2]
        fill = {"a": a, "b": b, "p": a * b}
    keys = {key_after(env_id, [s.format(**fill)]) for s in spellings}
    assert len(keys) == 1 and next(iter(keys))[1], keys


def test_sudoku_spellings_and_clear():
    env, _, _ = fresh("agentgym/Sudoku-4x4-v0")
    base = env.unwrapped
    cell = base.grid.index(0)
    row, col, digit = cell // 4 + 1, cell % 4 + 1, base.solution[cell]
    spellings = [f"place {digit} at r{row}c{col}", f"r{row}c{col}={digit}", f"R{row}C{col} = {digit}",
                 f"put {digit} in r{row}c{col}", f"r{row}c{col} {digit}"]
    keys = {key_after("agentgym/Sudoku-4x4-v0", [s]) for s in spellings}
    assert len(keys) == 1 and next(iter(keys))[1]
    start_key, _ = key_after("agentgym/Sudoku-4x4-v0", [])
    assert key_after("agentgym/Sudoku-4x4-v0", [spellings[0], f"clear r{row}c{col}"]) == (start_key, True)


def test_sudoku_rejects_rule_breaking_placements_and_givens():
    env, _, _ = fresh("agentgym/Sudoku-9x9-v0")
    base = env.unwrapped
    given = next(i for i, g in enumerate(base.givens) if g)
    obs, reward, terminated, _, info = env.step(f"r{given // 9 + 1}c{given % 9 + 1}=1")
    assert not info["action_valid"] and "is a given" in obs and not terminated
    blank = base.grid.index(0)
    clash = next(base.givens[j] for j in range(9 * (blank // 9), 9 * (blank // 9) + 9) if base.givens[j])
    obs, _, _, _, info = env.step(f"place {clash} at r{blank // 9 + 1}c{blank % 9 + 1}")
    assert not info["action_valid"] and "already holds" in obs


def test_minesweeper_first_reveal_is_always_safe_and_spellings_agree():
    for seed in range(15):
        for action in ("reveal 1 1", "reveal r8c8", "open 3,5", "click (2, 7)"):
            _, _, terminated, _, info = fresh("agentgym/Minesweeper-v0", seed)[0].step(action)
            assert info["action_valid"] and not (terminated and not info["won"])
    assert len({key_after("agentgym/Minesweeper-v0", [s]) for s in ("reveal 3 4", "reveal r3c4", "dig 3, 4")}) == 1


def test_minesweeper_mine_ends_the_episode_and_flags_protect():
    env, _, _ = fresh("agentgym/Minesweeper-Easy-v0", 3)
    env.step("reveal 3 3")
    mine = min(env.unwrapped.mines)
    cell = f"{mine // 6 + 1} {mine % 6 + 1}"
    assert env.step(f"flag {cell}")[4]["action_valid"]
    obs, _, terminated, _, info = env.step(f"reveal {cell}")
    assert not info["action_valid"] and "unflag" in obs and not terminated
    env.step(f"unflag {cell}")
    obs, reward, terminated, _, info = env.step(f"reveal {cell}")
    assert terminated and not info["won"] and reward == 0.0 and "BOOM" in obs and 0 < info["score"] < 1


def test_countdown_one_shot_rejects_reuse_and_fractions_then_accepts_an_answer():
    env, obs, _ = fresh("agentgym/Countdown-v0")
    numbers = env.unwrapped.numbers
    big = numbers[-1]
    obs, _, terminated, _, info = env.step(f"{big} * {big}")
    assert not info["action_valid"] and "used 2 times" in obs and not terminated
    odd = next((a, b) for a in numbers for b in numbers if a != b and b > 1 and a % b)
    obs, _, terminated, _, info = env.step(f"{odd[0]} / {odd[1]}")
    assert not info["action_valid"] and "whole number" in obs and not terminated
    obs, reward, terminated, _, info = env.step(env.unwrapped.expert_action())
    assert terminated and info["won"] and reward == 1.0 and info["score"] == 1.0


def test_countdown_one_shot_partial_score_follows_tv_rules():
    env, _, _ = fresh("agentgym/Countdown-v0")
    target, numbers = env.unwrapped.target, env.unwrapped.numbers
    near = min(numbers, key=lambda n: abs(n - target))
    _, reward, terminated, _, info = env.step(str(near))
    assert terminated and reward == 0.0 and not info["won"] and info["score"] in (0.0, 0.5, 0.7)


def test_countdown_stepwise_undo_and_dead_ends():
    env, _, info = fresh("agentgym/Countdown-Stepwise-Easy-v0")
    assert "undo" not in info["valid_actions"]
    start = info["state_key"]
    _, _, _, _, info = env.step(info["valid_actions"][0])
    assert "undo" in info["valid_actions"]
    _, _, _, _, info = env.step("undo")
    assert info["state_key"] == start
    obs, _, _, _, info = env.step("undo")
    assert not info["action_valid"] and "Nothing to undo" in obs
    obs, _, _, _, info = env.step("999 + 1")
    assert not info["action_valid"] and "do not hold" in obs


def test_wordle_hard_mode_rejects_guesses_that_ignore_hints():
    env, _, _ = fresh("agentgym/Wordle-Hard-v0", 1)
    env.step("guess arise")
    history = env.unwrapped.history
    assert history[-1][1] != "....." and history[-1][1] != "GGGGG", "pick a seed where ARISE reveals a hint"
    breaking = next(w for w in WORDS if rules.hard_mode_violation(w, history))
    obs, _, _, _, info = env.step(f"guess {breaking}")
    assert not info["action_valid"] and "hard mode" in obs and len(env.unwrapped.history) == 1


def test_wordle_unknown_words_cost_no_guess():
    env, _, _ = fresh("agentgym/Wordle-v0")
    for bad in ("guess xyzzy", "guess toolong", "12345"):
        obs, _, _, _, info = env.step(bad)
        assert not info["action_valid"] and "no guess was used" in obs.lower()
    assert env.unwrapped.history == []


def test_hanoi_refuses_big_on_small_without_moving():
    env, _, info = fresh("agentgym/Hanoi-v0")
    position = env.unwrapped.position
    source = next(i for i, s in enumerate(position) if s)
    first, second = (source + 1) % 3, (source + 2) % 3
    env.step(f"{'ABC'[source]}->{'ABC'[first]}")  # disk 1 out
    obs, _, _, _, info = env.step(f"{'ABC'[source]}->{'ABC'[first]}")  # disk 2 onto disk 1
    assert not info["action_valid"] and "cannot go on top of the smaller disk 1" in obs
    assert f"{'ABC'[source]}->{'ABC'[second]}" in info["valid_actions"]


def test_tree_search_feedback_and_backtracking():
    env, obs, info = fresh("agentgym/TreeSearch-Easy-v0", 2)
    assert info["valid_actions"] == ["1", "2"]
    obs, _, _, _, info = env.step("back")
    assert not info["action_valid"] and "root" in obs
    goal = env.unwrapped.goal
    wrong = tuple(3 - c for c in goal)
    for c in wrong:
        obs, _, _, _, info = env.step(str(c))
    assert "failure" in obs and info["valid_actions"] == ["back"]
    obs, _, _, _, info = env.step("1")
    assert not info["action_valid"] and "no children" in obs
    for action in ["back"] * 3 + [str(c) for c in goal]:
        obs, reward, terminated, _, info = env.step(action)
    assert terminated and info["won"] and reward == 1.0


def test_twenty_questions_answers_guesses_and_misunderstandings():
    env, obs, info = fresh("agentgym/TwentyQuestions-v0", 4)
    secret = env.unwrapped.secret
    assert "dog" in info["instruction"] and "Is it alive?" in info["system_prompt"]
    obs, _, _, _, info = env.step("Is it a living animal?")
    assert not info["action_valid"] and "one at a time" in obs and env.unwrapped.used == 0
    obs, _, _, _, info = env.step("Is it an animal?")
    assert info["action_valid"] and obs.startswith("Is it an animal? ") and env.unwrapped.used == 1
    obs, _, _, _, info = env.step("guess unicorn")
    assert not info["action_valid"]
    wrong = "dog" if secret != "dog" else "cat"
    obs, _, _, _, info = env.step(f"Is it a {wrong}?")
    assert info["action_valid"] and f"not {wrong}" in obs and env.unwrapped.used == 2
    _, reward, terminated, _, info = env.step(f"guess {secret.upper()}")
    assert terminated and info["won"] and reward == 1.0
