"""What a TextWorld game is: a challenge, a level, a split and a seed (pure data, no ``textworld`` import).

Levels are each challenge's own knobs, so a level here means what it means in TextWorld's papers and
``tw-make``; ``difficulty`` names pick one level per challenge:

============== ================================================= ====== ======= =====
challenge      native level                                      easy   medium  hard
============== ================================================= ====== ======= =====
treasure_hunter ``tw-treasure_hunter --level`` (1-30)             5      15      25
coin_collector ``tw-coin_collector --level`` (1-300, <=100 rooms) 5      15      130
cooking        1-5, a ``tw-cooking`` skill set (table below)      1      3       4
simple         1-3, ``tw-simple`` reward/goal settings            1      2       3
============== ================================================= ====== ======= =====

Treasure hunter levels above 25 take up to a minute to generate (they are allowed, only slow). Each split
draws its games from its own seed range, so train, valid and test never share a game; the cooking and simple
challenges also switch to TextWorld's held-out foods for the valid/test splits (their own ``split``/``test``
settings), as in the original benchmarks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

#: Bump when anything below changes the games a spec produces: the cache key includes it.
GENERATOR_VERSION = 1

DIFFICULTIES = ("easy", "medium", "hard")

#: split -> (first seed, number of games). Disjoint ranges: a seed is never in two splits.
SPLITS: dict[str, tuple[int, int]] = {"train": (0, 5000), "valid": (1_000_000, 500), "test": (2_000_000, 500)}

_COOKING_BASE = {"recipe": 1, "take": 1, "go": 1, "open": False, "cook": False, "cut": False, "drop": False,
                 "recipe_seed": 0}
#: Cooking levels: ingredients to find, rooms, and which skills (open/cook/cut) the recipe needs.
#: ``drop`` is never used: TextWorld records no walkthrough for it.
_COOKING_LEVELS: dict[int, dict[str, Any]] = {
    1: {"recipe": 1, "take": 1, "go": 1},
    2: {"recipe": 1, "take": 1, "go": 1, "cook": True, "cut": True},
    3: {"recipe": 2, "take": 2, "go": 6, "open": True, "cook": True, "cut": True},
    4: {"recipe": 3, "take": 3, "go": 9, "open": True, "cook": True, "cut": True},
    5: {"recipe": 3, "take": 3, "go": 12, "open": True, "cook": True, "cut": True},
}
#: Simple levels: (reward frequency, how much of the goal the intro states).
_SIMPLE_LEVELS = {1: ("dense", "detailed"), 2: ("balanced", "brief"), 3: ("sparse", "none")}


@dataclass(frozen=True)
class Challenge:
    """One TextWorld challenge: its ``tw-make`` name, valid levels and the level of each difficulty."""

    name: str
    tw_name: str
    levels: range
    difficulty_levels: dict[str, int]
    description: str

    def settings(self, level: int, split: str) -> dict[str, Any]:
        """The ``settings`` mapping textworld's challenge ``make`` expects for ``level`` in ``split``."""
        if self.name == "cooking":
            return {**_COOKING_BASE, **_COOKING_LEVELS[level], "split": split}
        if self.name == "simple":
            rewards, goal = _SIMPLE_LEVELS[level]
            return {"rewards": rewards, "goal": goal, "test": split == "test"}
        return {"level": level}


CHALLENGES: dict[str, Challenge] = {
    c.name: c
    for c in (
        Challenge("cooking", "tw-cooking", range(1, 6), {"easy": 1, "medium": 3, "hard": 4},
                  "read the cookbook, gather, cut and cook the ingredients, prepare and eat the meal"),
        Challenge("treasure_hunter", "tw-treasure_hunter", range(1, 31), {"easy": 5, "medium": 15, "hard": 25},
                  "find the named object in a house with doors, containers and keys"),
        Challenge("coin_collector", "tw-coin_collector", range(1, 301), {"easy": 5, "medium": 15, "hard": 130},
                  "navigate a chain of rooms (with dead ends at high levels) to pick up a coin"),
        Challenge("simple", "tw-simple", range(1, 4), {"easy": 1, "medium": 2, "hard": 3},
                  "a fixed six-room house: fetch a food and put it on the stove; sparser rewards and goals by level"),
    )
}


def resolve_level(challenge: str, difficulty: str | None, level: int | None) -> int:
    """The native level for ``difficulty`` or ``level`` (``level`` wins; neither given means ``medium``)."""
    if challenge not in CHALLENGES:
        raise ValueError(f"challenge must be one of {', '.join(CHALLENGES)}, got {challenge!r}")
    info = CHALLENGES[challenge]
    if level is not None:
        if not isinstance(level, int) or level not in info.levels:
            raise ValueError(f"{challenge} level must be an int in [{info.levels.start}, {info.levels.stop - 1}], "
                             f"got {level!r}")
        if difficulty is not None and info.difficulty_levels.get(difficulty) != level:
            raise ValueError(f"give difficulty= or level=, not both (difficulty {difficulty!r} is level "
                             f"{info.difficulty_levels.get(difficulty)}, level= says {level})")
        return level
    difficulty = "medium" if difficulty is None else difficulty
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {', '.join(DIFFICULTIES)}, got {difficulty!r}")
    return info.difficulty_levels[difficulty]


def split_seeds(split: str) -> range:
    """The generation seeds of ``split``'s games, in task order."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    first, count = SPLITS[split]
    return range(first, first + count)


@dataclass(frozen=True)
class GameSpec:
    """Everything that determines a generated game (with the textworld version and ``GENERATOR_VERSION``)."""

    challenge: str
    level: int
    split: str
    seed: int

    @property
    def tw_name(self) -> str:
        return CHALLENGES[self.challenge].tw_name

    def settings(self) -> dict[str, Any]:
        return CHALLENGES[self.challenge].settings(self.level, self.split)

    def digest(self) -> str:
        """A short hash of what generation reads, so a changed level table can never reuse a stale game."""
        material = json.dumps({"tw": self.tw_name, "settings": self.settings(), "seed": self.seed,
                               "generator": GENERATOR_VERSION}, sort_keys=True)
        return hashlib.blake2b(material.encode(), digest_size=5).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameSpec:
        return cls(str(data["challenge"]), int(data["level"]), str(data["split"]), int(data["seed"]))
