"""Task sets: floorplan layouts, the three splits, and ``(split, index) -> TaskSpec``.

A task is fully determined by its split and index: the index fixes a seed (hashed from the text
``household/<split>/<index>``), the seed fixes the task type's slot, floorplan, goal object and goal
receptacle, and :func:`~agentgym_envs.household.generate.build_world` builds the room from it. Nothing is
stored on disk and no NumPy stream is involved, so task ids are stable across machines and versions.

Splits mirror ALFWorld's sizes and task-type mix: ``train`` 3,553, ``valid_seen`` 140, ``valid_unseen`` 134.
``valid_unseen`` is out of distribution twice over: it uses only floorplans in
:data:`~agentgym_envs.household.catalog.UNSEEN_FLOORPLANS`, and its goals are only (object kind, receptacle
kind) pairs that :func:`held_out` reserves, which ``train``/``valid_seen`` never use, neither as goals nor
as places where a movable object starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property

from ..seeding import text_seed
from .catalog import (
    APPLIANCE, EXAMINABLE, FLOORPLANS, LAMP_HOSTS, LAMPS, OBJECT_KINDS, ROOM_RECEPTACLES, UNSEEN_FLOORPLANS,
    room_object_kinds,
)
from .rng import SplitMix64

PICK_PLACE, EXAMINE, CLEAN, HEAT, COOL, PICK_TWO = (
    "pick_and_place", "look_at_obj_in_light", "pick_clean_then_place", "pick_heat_then_place",
    "pick_cool_then_place", "pick_two_obj_and_place",
)
TASK_TYPES = (PICK_PLACE, EXAMINE, CLEAN, HEAT, COOL, PICK_TWO)
#: The verb that transforms the goal object in the three ``pick_<verb>_then_place`` types.
TRANSFORM = {CLEAN: "clean", HEAT: "heat", COOL: "cool"}

#: Tasks per split and type, in TASK_TYPES order (ALFWorld's split sizes: 3,553 / 140 / 134).
SPLIT_COUNTS: dict[str, tuple[int, ...]] = {
    "train": (790, 308, 650, 459, 533, 813),
    "valid_seen": (35, 13, 27, 16, 25, 24),
    "valid_unseen": (24, 18, 31, 23, 21, 17),
}
SPLITS = tuple(SPLIT_COUNTS)
#: One in this many (object kind, receptacle kind) pairs is held out for ``valid_unseen``.
HELD_OUT_ONE_IN = 5


@dataclass(frozen=True)
class Layout:
    """A floorplan's furniture: receptacle instances (sorted by name) and the lamps standing on them."""

    floorplan: int
    room: str
    receptacles: tuple[tuple[str, str], ...]  # (name, kind)
    lamps: tuple[tuple[str, str], ...]  # (lamp name, host receptacle name)

    @cached_property
    def kinds(self) -> frozenset[str]:
        return frozenset(kind for _, kind in self.receptacles)

    @cached_property
    def by_kind(self) -> dict[str, tuple[str, ...]]:
        """Receptacle names of each kind, in order."""
        return {kind: tuple(n for n, k in self.receptacles if k == kind) for kind in self.kinds}

    @cached_property
    def lamp_kinds(self) -> frozenset[str]:
        return frozenset(name.split()[0] for name, _ in self.lamps)


@dataclass(frozen=True)
class TaskSpec:
    """Everything that defines one task; the world is built from it deterministically."""

    split: str
    index: int
    task_type: str
    floorplan: int
    obj: str  # goal object kind
    target: str  # goal receptacle kind (a lamp kind for look_at_obj_in_light)
    phrasing: int  # which of the two ALFWorld goal templates
    seed: int  # seeds the world's object placement

    @property
    def task_id(self) -> str:
        return f"household/{self.split}/{self.index}"

    @property
    def seen(self) -> bool:
        """Whether the task draws from the seen distribution (``train``/``valid_seen``)."""
        return self.split != "valid_unseen"


@cache
def held_out(obj: str, receptacle: str) -> bool:
    """Whether the pair is reserved for ``valid_unseen`` (a fixed hash: the same in every version)."""
    return text_seed("household-held-out", obj, receptacle) % HELD_OUT_ONE_IN == 0


def room_of(floorplan: int) -> str:
    return next(room for room, plans in FLOORPLANS.items() if floorplan in plans)


@cache
def build_layout(floorplan: int) -> Layout:
    """The furniture of a floorplan: counts per kind drawn from the room's ranges, lamps on hosts."""
    room = room_of(floorplan)
    rng = SplitMix64(text_seed("household-layout", floorplan))
    counts = [(kind, rng.between(low, high)) for kind, low, high in sorted(ROOM_RECEPTACLES[room])]
    receptacles = tuple((f"{kind} {i}", kind) for kind, count in counts for i in range(1, count + 1))
    hosts = [name for name, kind in receptacles if kind in LAMP_HOSTS]
    lamp_kinds = (LAMPS, LAMPS[:1], LAMPS[1:])[rng.below(3)] if hosts else ()
    lamps = tuple((f"{lamp} 1", rng.choice(hosts)) for lamp in lamp_kinds)
    return Layout(floorplan, room, receptacles, lamps)


@cache
def start_homes(obj: str, avoid: str | None, floorplan: int, seen: bool) -> tuple[str, ...]:
    """Receptacle kinds where an ``obj`` may start: its homes in this floorplan, minus the goal receptacle
    kind ``avoid`` (so no goal holds at the start) and, in seen splits, minus held-out pairs."""
    homes = OBJECT_KINDS[obj].homes & build_layout(floorplan).kinds
    return tuple(sorted(k for k in homes if k != avoid and not (seen and held_out(obj, k))))


def goal_pairs(layout: Layout, task_type: str, seen: bool) -> list[tuple[str, str]]:
    """The (object kind, target kind) goals of ``task_type`` this layout supports in a split family."""
    transform = TRANSFORM.get(task_type)
    if transform is not None and APPLIANCE[transform] not in layout.kinds:
        return []
    pairs = []
    for obj in room_object_kinds(layout.room):
        kind = OBJECT_KINDS[obj]
        if transform is not None and not getattr(kind, f"{transform}able"):
            continue
        if task_type == EXAMINE:
            targets = sorted(layout.lamp_kinds) if obj in EXAMINABLE else []
        else:
            targets = sorted(kind.homes & layout.kinds - {APPLIANCE.get(transform, "")})
        for target in targets:
            if held_out(obj, target) != seen and start_homes(obj, target, layout.floorplan, seen):
                pairs.append((obj, target))
    return pairs


@cache
def _options(seen: bool, task_type: str) -> tuple[tuple[int, tuple[tuple[str, str], ...]], ...]:
    """(floorplan, goal pairs) for every floorplan of the split family that supports ``task_type``."""
    plans = [fp for room in FLOORPLANS.values() for fp in room if (fp in UNSEEN_FLOORPLANS) != seen]
    options = tuple((fp, tuple(pairs)) for fp in plans if (pairs := goal_pairs(build_layout(fp), task_type, seen)))
    if not options:
        raise RuntimeError(f"no floorplan supports {task_type} in the {'seen' if seen else 'unseen'} splits")
    return options


@cache
def task_types(split: str) -> tuple[str, ...]:
    """The task type of every index of ``split``: the split's counts, interleaved by a fixed shuffle."""
    if split not in SPLIT_COUNTS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    labels = [t for t, n in zip(TASK_TYPES, SPLIT_COUNTS[split]) for _ in range(n)]
    SplitMix64(text_seed("household-types", split)).shuffle(labels)
    return tuple(labels)


@cache
def task_spec(split: str, index: int) -> TaskSpec:
    """Task ``index`` of ``split``."""
    types = task_types(split)
    if not 0 <= index < len(types):
        raise ValueError(f"task index must be in [0, {len(types)}) for split {split!r}, got {index}")
    seed = text_seed("household", split, index)
    rng = SplitMix64(seed)
    floorplan, pairs = rng.choice(_options(split != "valid_unseen", types[index]))
    obj, target = rng.choice(pairs)
    return TaskSpec(split, index, types[index], floorplan, obj, target, rng.below(2), rng.next64())


def task_indices(split: str, task_type: str | None) -> tuple[int, ...]:
    """Indices of ``split`` whose type is ``task_type`` (all of them for ``None``)."""
    if task_type is not None and task_type not in TASK_TYPES:
        raise ValueError(f"task_type must be one of {', '.join(TASK_TYPES)} or None, got {task_type!r}")
    return tuple(i for i, t in enumerate(task_types(split)) if task_type is None or t == task_type)
