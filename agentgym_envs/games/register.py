"""Registers the single-player puzzle games (entry points are strings: nothing loads until ``make``).

Each game has a default id (``difficulty="medium"``) and ``-Easy``/``-Hard`` variants that only fix the
``difficulty`` make kwarg; ``gymnasium.make(id, difficulty=...)`` overrides it. ``max_episode_steps`` leaves
room for invalid attempts on top of what the game itself allows (guesses, questions) and covers the expert's
worst case (a full depth-first search in TreeSearch, every blank of a Sudoku).
"""

from __future__ import annotations

from typing import Any

from ..registration import register_env

_PKG = "agentgym_envs.games"
_SUFFIX = {"easy": "-Easy", "medium": "", "hard": "-Hard"}

#: (id stem, entry point, fixed kwargs, description, {difficulty: (max_episode_steps, what the level means)})
_GAMES: list[tuple[str, str, dict[str, Any], str, dict[str, tuple[int, str]]]] = [
    ("Wordle", "wordle.env:WordleEnv", {},
     "Wordle: find a five-letter word in six guesses from green/yellow/gray feedback",
     {"easy": (20, "secret from ~100 everyday words"), "medium": (20, "secret from ~500 words"),
      "hard": (20, "~500 words, hard mode")}),
    ("Mastermind", "mastermind.env:MastermindEnv", {}, "Mastermind: break a digit code from black/white pegs",
     {"easy": (20, "3 digits of 4, 8 guesses"), "medium": (25, "4 digits of 6, 10 guesses"),
      "hard": (30, "5 digits of 8, 12 guesses")}),
    ("Sudoku-4x4", "sudoku.env:SudokuEnv", {"size": 4}, "Sudoku 4×4 with a unique solution",
     {"easy": (20, "10 givens"), "medium": (30, "7 givens"), "hard": (40, "5 givens")}),
    ("Sudoku-9x9", "sudoku.env:SudokuEnv", {"size": 9}, "Sudoku 9×9 with a unique solution",
     {"easy": (120, "40 givens"), "medium": (150, "32 givens"), "hard": (170, "26 givens")}),
    ("Minesweeper", "minesweeper.env:MinesweeperEnv", {}, "Minesweeper on no-guess boards, first reveal safe",
     {"easy": (60, "6×6, 5 mines"), "medium": (100, "8×8, 10 mines"), "hard": (200, "12×12, 24 mines")}),
    ("Countdown", "countdown.env:CountdownEnv", {}, "Countdown numbers round, one expression to hit the target",
     {"easy": (5, "4 numbers, 2-digit target"), "medium": (5, "6 numbers, target 101–999"),
      "hard": (5, "6 mostly small numbers, ≥ 3 operations needed")}),
    ("Countdown-Stepwise", "countdown.env:CountdownStepwiseEnv", {},
     "Countdown numbers round, one operation per step ('25 * 4') with undo",
     {"easy": (20, "4 numbers, 2-digit target"), "medium": (40, "6 numbers, target 101–999"),
      "hard": (40, "6 mostly small numbers, ≥ 3 operations needed")}),
    ("Hanoi", "hanoi.env:HanoiEnv", {}, "Tower of Hanoi: move the tower, never a larger disk on a smaller",
     {"easy": (30, "3 disks"), "medium": (60, "4 disks"), "hard": (200, "6 disks")}),
    ("TreeSearch", "tree_search.env:TreeSearchEnv", {},
     "k-ary tree search for a hidden goal leaf with failure feedback and backtracking",
     {"easy": (40, "k=2, depth 3"), "medium": (120, "k=3, depth 3"), "hard": (800, "k=4, depth 4")}),
    ("TwentyQuestions", "twenty_questions.env:TwentyQuestionsEnv", {},
     "Twenty Questions with a deterministic keyword-matching answerer",
     {"easy": (40, "25 objects, 20 questions"), "medium": (40, "100 objects, 20 questions"),
      "hard": (30, "100 objects, 12 questions")}),
]


def _register_all() -> tuple[str, ...]:
    ids = []
    for stem, entry, fixed, description, levels in _GAMES:
        for difficulty, (limit, note) in levels.items():
            ids.append(f"agentgym/{stem}{_SUFFIX[difficulty]}-v0")
            register_env(ids[-1], f"{_PKG}.{entry}", family="games", max_episode_steps=limit,
                         kwargs={**fixed, "difficulty": difficulty}, description=f"{description} ({note}).")
    return tuple(ids)


#: The puzzle ids (the ``games`` family also holds the multi-agent games' self-play ids).
PUZZLE_IDS: tuple[str, ...] = _register_all()
