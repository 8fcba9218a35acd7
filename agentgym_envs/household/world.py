"""The household world model: plain objects and the rules that change them (no text, no randomness).

A :class:`World` is one room: named receptacles holding named objects, an agent that stands at one
receptacle (or in the middle of the room) and holds at most one object. Every object is in exactly one
place: one receptacle's ``contents`` or the agent's hand (``holding``); the rules only ever *move* names
between those places, which is what the conservation property test checks.

Admissibility is the single source of legality: :meth:`World.admissible` lists the commands that can be
carried out now (ALFWorld's "admissible commands"), and :meth:`World.apply` carries out one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from .catalog import APPLIANCE, LAMPS, OBJECT_KINDS, OPENABLE, SLICERS


class Command(NamedTuple):
    """A parsed command: ``verb`` plus up to two entity names (``take apple 1 from countertop 1``)."""

    verb: str
    obj: str | None = None
    target: str | None = None


@dataclass
class Thing:
    """An object instance and its mutable state (``on`` is only meaningful for lamps)."""

    name: str
    kind: str
    clean: bool = False
    hot: bool = False
    cool: bool = False
    sliced: bool = False
    on: bool = False


@dataclass
class Receptacle:
    """A receptacle instance; ``contents`` lists object names in the order they arrived."""

    name: str
    kind: str
    is_open: bool = False
    contents: list[str] = field(default_factory=list)

    @property
    def openable(self) -> bool:
        return self.kind in OPENABLE

    @property
    def accessible(self) -> bool:
        """Whether the agent can see into / reach into it (no door, or the door is open)."""
        return self.is_open or self.kind not in OPENABLE


@dataclass
class World:
    """One room's full physical state."""

    room: str
    receptacles: dict[str, Receptacle]
    objects: dict[str, Thing]
    location: str | None = None
    holding: str | None = None

    # ----------------------------------------------------------------- queries
    def of_kind(self, kind: str) -> list[Receptacle]:
        return [r for r in self.receptacles.values() if r.kind == kind]

    def where(self, name: str) -> str | None:
        """The receptacle holding object ``name`` (``None`` if the agent holds it)."""
        for r in self.receptacles.values():
            if name in r.contents:
                return r.name
        return None

    def here(self) -> Receptacle | None:
        return self.receptacles[self.location] if self.location is not None else None

    def admissible(self) -> list[Command]:
        """Every command that can be carried out now, in a stable order (go-tos first)."""
        return [Command("go", name) for name in self.receptacles if name != self.location] + self.local_commands()

    def local_commands(self) -> list[Command]:
        """The admissible commands other than ``go to``: what can be done here, then inventory and look."""
        here = self.here()
        commands = self._local_commands(here) if here is not None else []
        commands += [Command("inventory"), Command("look")]
        return commands

    def _local_commands(self, here: Receptacle) -> list[Command]:
        commands: list[Command] = []
        if here.openable:
            commands.append(Command("close" if here.is_open else "open", here.name))
        held = self.objects[self.holding] if self.holding is not None else None
        if here.accessible:
            for name in here.contents:
                thing = self.objects[name]
                kind = OBJECT_KINDS[thing.kind]
                if held is None and kind.pickupable:
                    commands.append(Command("take", name, here.name))
                if held is not None and held.kind in SLICERS and kind.sliceable and not thing.sliced:
                    commands.append(Command("slice", name, held.name))
                if thing.kind in LAMPS:
                    commands.append(Command("use", name))
            if held is not None:
                commands.append(Command("put", held.name, here.name))
        if held is not None:
            kind = OBJECT_KINDS[held.kind]
            for verb, can in (("clean", kind.cleanable), ("heat", kind.heatable), ("cool", kind.coolable)):
                if can and here.kind == APPLIANCE[verb]:
                    commands.append(Command(verb, held.name, here.name))
            commands.append(Command("examine", held.name))
        commands.append(Command("examine", here.name))
        return commands

    # ----------------------------------------------------------------- rules
    def apply(self, command: Command) -> None:
        """Carry out an admissible command (callers check admissibility; this does not)."""
        verb, obj, target = command
        if verb == "go":
            self.location = obj
        elif verb in ("open", "close"):
            self.receptacles[obj].is_open = verb == "open"
        elif verb == "take":
            self.receptacles[target].contents.remove(obj)
            self.holding = obj
        elif verb == "put":
            self.receptacles[target].contents.append(obj)
            self.holding = None
        elif verb in ("clean", "heat", "cool", "slice", "use"):
            _transform(self.objects[obj], verb)
        # examine, inventory and look change nothing

    # ----------------------------------------------------------------- invariants
    def placements(self) -> list[str]:
        """Every object name once per place it occupies (conservation: a permutation of ``objects``)."""
        names = [name for r in self.receptacles.values() for name in r.contents]
        return names + ([self.holding] if self.holding is not None else [])


def _transform(thing: Thing, verb: str) -> None:
    """State changes of the transforming verbs; heating and cooling undo each other."""
    if verb == "clean":
        thing.clean = True
    elif verb == "heat":
        thing.hot, thing.cool = True, False
    elif verb == "cool":
        thing.cool, thing.hot = True, False
    elif verb == "slice":
        thing.sliced = True
    elif verb == "use":
        thing.on = not thing.on
