"""Tutor moves and the tutor's view of the session (what any tutor, scripted or learned, can know).

Both action forms of the tutoring env, tool calls and free text, become a :class:`Move`; the env then
plays the move, so a free-text turn and the equivalent tool call have exactly the same effect.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .domain import MISCONCEPTIONS, Item

MoveKind = Literal["ask_item", "hint", "explain", "probe", "talk", "end_session"]


@dataclass(frozen=True)
class Move:
    kind: MoveKind
    component: str | None = None
    misconception: str | None = None
    """The probed misconception, or the one ``ask_item`` asked an item to reveal."""
    text: str = ""
    addressed: tuple[str, ...] = ()
    """Misconceptions the text addresses (by their cues); what makes a hint or explanation targeted."""
    via: Literal["tool", "text"] = "tool"

    def canonical(self) -> str:
        """The move without its wording: equal for moves with equal effects (used in the state key)."""
        parts = [p for p in (self.component, self.misconception) if p]
        if self.addressed and self.kind in ("hint", "explain", "talk"):
            parts.append("addresses " + "+".join(self.addressed))
        return f"{self.kind}({', '.join(parts)})"


@dataclass(frozen=True)
class Seen:
    """An answer the tutor saw: the item, the student's answer, and whether it was right."""

    item: Item
    answer: str
    correct: bool
    turn: int
    """0 for the pre-test, else the tutor turn of the ``ask_item``."""


@dataclass
class TutorView:
    """Everything a tutor can know about the session: the scripted tutors read only this."""

    student: str
    components: tuple[str, ...]
    max_turns: int
    pretest: list[Seen] = field(default_factory=list)
    asked: list[Seen] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list)
    """Every played move, in order: move ``i`` was tutor turn ``i + 1``."""
    revealed: list[str] = field(default_factory=list)
    """Keys of the items whose answer the tutor revealed, in order."""

    @property
    def turns_used(self) -> int:
        return len(self.moves)

    @property
    def turns_left(self) -> int:
        return self.max_turns - self.turns_used

    def seen(self) -> list[Seen]:
        return [*self.pretest, *self.asked]

    def answers_about(self, component: str, after_turn: int = -1) -> list[Seen]:
        """The component's answers seen after tutor turn ``after_turn`` (all of them by default)."""
        return [s for s in self.seen() if s.item.component == component and s.turn > after_turn]

    def last_teaching_turn(self, component: str) -> int:
        """The last turn that taught ``component`` (hint, explanation or probe of its misconception), or 0."""
        last = 0
        for turn, move in enumerate(self.moves, start=1):
            about = MISCONCEPTIONS[move.misconception].component if move.kind == "probe" else move.component
            if move.kind in ("hint", "explain", "probe") and about == component:
                last = turn
        return last
