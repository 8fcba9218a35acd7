"""Build the room of a task: furniture from its floorplan, then goal objects and distractors.

Placement rules keep every task solvable and not already solved: goal objects start in one of their
homes other than the goal receptacle kind; distractors are of other kinds (so they can never satisfy the
goal); every object starts dirty, neither hot nor cool, whole, and every lamp off; every door starts
closed. In seen splits no movable object starts in a held-out (object, receptacle) pair, so ``train``
never shows one (lamps are fixtures of a floorplan).
"""

from __future__ import annotations

from .catalog import room_object_kinds
from .rng import SplitMix64
from .tasks import EXAMINE, PICK_TWO, Layout, TaskSpec, build_layout, start_homes
from .world import Receptacle, Thing, World

#: How many objects of the goal kind a room holds (ALFWorld rooms often have more than needed).
GOAL_COPIES = {PICK_TWO: (2, 3)}
DEFAULT_GOAL_COPIES = (1, 2)
#: How many distractor objects (of other kinds) a room holds.
DISTRACTORS = (8, 14)


def build_world(spec: TaskSpec) -> World:
    """The initial world of ``spec`` (deterministic: it depends only on the spec)."""
    layout = build_layout(spec.floorplan)
    rng = SplitMix64(spec.seed)
    world = World(layout.room, {name: Receptacle(name, kind) for name, kind in layout.receptacles}, {})
    for lamp, host in layout.lamps:
        _add(world, lamp, host)
    placer = _Placer(world, layout, rng)
    avoid = None if spec.task_type == EXAMINE else spec.target
    homes = start_homes(spec.obj, avoid, spec.floorplan, spec.seen)
    for _ in range(rng.between(*GOAL_COPIES.get(spec.task_type, DEFAULT_GOAL_COPIES))):
        placer.place(spec.obj, homes)
    kinds = [k for k in room_object_kinds(layout.room) if k != spec.obj]
    for _ in range(rng.between(*DISTRACTORS)):
        kind = rng.choice(kinds)
        homes = start_homes(kind, None, spec.floorplan, spec.seen)
        if homes:
            placer.place(kind, homes)
    return world


class _Placer:
    """Adds next-numbered objects (``apple 1``, ``apple 2`` …) to random receptacles of given kinds."""

    def __init__(self, world: World, layout: Layout, rng: SplitMix64):
        self.world, self.layout, self.rng = world, layout, rng
        self.numbers: dict[str, int] = {}

    def place(self, kind: str, home_kinds: tuple[str, ...]) -> None:
        candidates = [name for home in home_kinds for name in self.layout.by_kind[home]]
        self.numbers[kind] = number = self.numbers.get(kind, 0) + 1
        _add(self.world, f"{kind} {number}", self.rng.choice(candidates))


def _add(world: World, name: str, receptacle: str) -> None:
    world.objects[name] = Thing(name, name.rsplit(" ", 1)[0])
    world.receptacles[receptacle].contents.append(name)
