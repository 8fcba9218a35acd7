"""Settings of the two tutoring envs (``gymnasium.make`` kwargs), validated with the reason and the remedy."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

from .domain import COMPONENT_IDS

LeakMode = Literal["soft", "hard"]
C = TypeVar("C")


def settings_of(cls: type[C], settings: dict[str, Any]) -> C:
    """``cls(**settings)``, with a message naming the accepted settings when one is unknown."""
    known = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise TypeError(f"unknown setting(s) {', '.join(unknown)}; {cls.__name__} accepts {', '.join(known)}")
    return cls(**settings)


@dataclass(frozen=True)
class TutoringConfig:
    """A tutoring session: which components, how many test items, how long, and how leaks are punished."""

    num_components: int = 3
    """Components per session, drawn from the seed (at least one of them holds a misconception)."""
    items_per_component: int = 3
    """Pre-test items per component; the post-test has as many new items per component."""
    max_turns: int = 12
    """Tutor turns before the post-test starts by itself (invalid actions do not count)."""
    leak_mode: LeakMode = "soft"
    """``soft``: -``leak_penalty`` per revealed answer, at the turn it happens, in all at most -1.
    ``hard``: any revealed answer makes the return -1 whatever the gain (after Dinucu-Jianu et al., 2025)."""
    leak_penalty: float = 0.25
    """λ, the soft-mode penalty per revealed answer."""

    def __post_init__(self) -> None:
        if not 1 <= self.num_components <= len(COMPONENT_IDS):
            raise ValueError(f"num_components must be in [1, {len(COMPONENT_IDS)}], got {self.num_components}")
        if not 1 <= self.items_per_component <= 10:
            raise ValueError(f"items_per_component must be in [1, 10], got {self.items_per_component}")
        if not 1 <= self.max_turns <= 200:
            raise ValueError(f"max_turns must be in [1, 200], got {self.max_turns}")
        if self.leak_mode not in ("soft", "hard"):
            raise ValueError(f"leak_mode must be 'soft' or 'hard', got {self.leak_mode!r}")
        if not 0.0 <= self.leak_penalty <= 1.0:
            raise ValueError(f"leak_penalty must be in [0, 1] (the total penalty is capped at 1 anyway), "
                             f"got {self.leak_penalty}")


@dataclass(frozen=True)
class SchedulingConfig:
    """A practice-scheduling episode: a learner over every component and a budget of activities."""

    horizon: int = 40
    """Activities (practice, study, rest) before the final assessment."""
    mastery_threshold: float = 0.8
    """Final mastery at or above which the episode counts as won."""

    def __post_init__(self) -> None:
        if not 1 <= self.horizon <= 1000:
            raise ValueError(f"horizon must be in [1, 1000], got {self.horizon}")
        if not 0.0 < self.mastery_threshold <= 1.0:
            raise ValueError(f"mastery_threshold must be in (0, 1], got {self.mastery_threshold}")
