"""The scripted expert: the next command towards the goal, from any state, using hidden knowledge.

The expert is a function of the current world state (not of a plan made at reset), so it also recovers
after random actions, from snapshots, and mid-episode hand-offs. It knows where every object is, which is
what ALFWorld's handcoded expert knows too. ``go to`` costs one step whatever the distance, so choices
minimise the number of commands: a goal object already at hand or behind an open door wins, a goal
object that already has the required state (clean/hot/cool) saves the trip to the appliance.

:func:`detour_commands` lists the wrong turns an exploring expert may take instead (behaviour-cloning data
with recovery states); the expert recovers from any of them because it is a function of the state.
"""

from __future__ import annotations

import dataclasses

from .catalog import APPLIANCE, OBJECT_KINDS
from .goals import STATE
from .knowledge import Knowledge
from .tasks import EXAMINE, PICK_TWO, TRANSFORM, TaskSpec
from .world import Command, Receptacle, Thing, World


def expert_command(world: World, spec: TaskSpec) -> Command:
    """The expert's next command (always admissible)."""
    held = world.objects[world.holding] if world.holding is not None else None
    if held is not None and held.kind != spec.obj:
        return _free_hands(world, held)
    if spec.task_type == EXAMINE:
        return _examine(world, spec, held)
    if spec.task_type == PICK_TWO:
        return _pick_two(world, spec, held)
    return _transform_and_place(world, spec, held)


def search_command(world: World, spec: TaskSpec, knowledge: Knowledge) -> Command:
    """The next command of an expert *without* hidden information: it plans like :func:`expert_command`
    but only over what the agent has seen, and when the object it needs has not been seen yet it searches.

    Search order: unexplored receptacles whose kind is a common-sense home of the object sought (the
    catalogue's ``homes``, the knowledge a language model brings), then the others, each in room order,
    opening closed ones. Its demonstrations show what the oracle's never do: arriving somewhere, not
    finding the object, and going on — the states a policy that cannot see through doors will be in.
    """
    try:
        return expert_command(_known_world(world, knowledge), spec)
    except _Unseen:
        pass
    sought = spec.target if spec.task_type == EXAMINE and world.holding is not None else spec.obj
    homes = OBJECT_KINDS[sought].homes if sought in OBJECT_KINDS else frozenset()
    unexplored = [r for r in world.receptacles.values() if r.name not in knowledge.looked_in]
    if not unexplored:
        return Command("look")
    here = world.here()
    if here is not None and here in unexplored:  # arrived at a closed one: look inside first
        return _approach(world, here) or Command("look")
    best = min(unexplored, key=lambda r: r.kind not in homes)  # min keeps room order among equals
    return _approach(world, best) or Command("look")


def detour_commands(world: World, command: Command, *, picked_up: bool) -> list[Command]:
    """Wrong turns instead of the expert's next ``command``: while the agent has picked nothing up this
    episode (``picked_up`` false) and ``command`` is a ``go``, a ``go`` to every other receptacle but the
    one the agent stands at, in room order; otherwise none.

    The oracle walks straight to the object it knows about, so its demonstrations never show arriving
    somewhere, not finding the object and going elsewhere. A detour puts such a state into the data.
    """
    if picked_up or command.verb != "go":
        return []
    return [Command("go", name) for name in world.receptacles if name not in (command.obj, world.location)]


class _Unseen(Exception):
    """The plan needs an object the agent has not seen yet."""


def _known_world(world: World, knowledge: Knowledge) -> World:
    """The world as the agent knows it: receptacles it has not looked into appear empty."""
    receptacles = {n: dataclasses.replace(r, contents=list(r.contents) if n in knowledge.looked_in else [])
                   for n, r in world.receptacles.items()}
    visible = {n for r in receptacles.values() for n in r.contents} | {world.holding}
    return World(world.room, receptacles, {n: t for n, t in world.objects.items() if n in visible},
                 world.location, world.holding)


def _reach_cost(world: World, r: Receptacle) -> int:
    """Commands needed before the agent can reach into ``r``: a ``go to`` and/or an ``open``."""
    return (world.location != r.name) + (not r.accessible)


def _approach(world: World, r: Receptacle) -> Command | None:
    """Go to ``r`` and open it; ``None`` once the agent can reach into it."""
    if world.location != r.name:
        return Command("go", r.name)
    if not r.accessible:
        return Command("open", r.name)
    return None


def _free_hands(world: World, held: Thing) -> Command:
    """Put down an object that is in the way, here if possible, else on the nearest open surface."""
    here = world.here()
    if here is None:
        here = min(world.receptacles.values(), key=lambda r: _reach_cost(world, r))
    return _approach(world, here) or Command("put", held.name, here.name)


def _fetch(world: World, candidates: list[str], extra_cost: dict[str, int] | None = None) -> Command:
    """Go for the cheapest of ``candidates`` (object names lying in receptacles) and take it."""
    if not candidates:
        raise _Unseen
    extra_cost = extra_cost or {}
    where = {n: world.receptacles[r] for r in world.receptacles for n in world.receptacles[r].contents}
    best = min(candidates, key=lambda n: _reach_cost(world, where[n]) + extra_cost.get(n, 0))
    return _approach(world, where[best]) or Command("take", best, where[best].name)


def _deliver(world: World, held: Thing, targets: list[Receptacle]) -> Command:
    target = min(targets, key=lambda r: _reach_cost(world, r))
    return _approach(world, target) or Command("put", held.name, target.name)


def _transform_and_place(world: World, spec: TaskSpec, held: Thing | None) -> Command:
    state = STATE.get(spec.task_type)
    if held is not None:
        if state is not None and not getattr(held, state):
            verb = TRANSFORM[spec.task_type]
            appliance = min(world.of_kind(APPLIANCE[verb]), key=lambda r: world.location != r.name)
            if world.location != appliance.name:
                return Command("go", appliance.name)
            return Command(verb, held.name, appliance.name)
        return _deliver(world, held, world.of_kind(spec.target))
    placed = {n for r in world.of_kind(spec.target) for n in r.contents}
    # A goal object already in a goal receptacle still counts when it lacks the state: take it out again.
    candidates = [t.name for t in world.objects.values()
                  if t.kind == spec.obj and (t.name not in placed or state is not None)]
    extra = {n: 2 for n in candidates if state is not None and not getattr(world.objects[n], state)}
    return _fetch(world, candidates, extra)


def _examine(world: World, spec: TaskSpec, held: Thing | None) -> Command:
    if held is None:
        return _fetch(world, [t.name for t in world.objects.values() if t.kind == spec.obj])
    lamps = [t for t in world.objects.values() if t.kind == spec.target]
    if not lamps:
        raise _Unseen
    lamp = min(lamps, key=lambda t: (world.where(t.name) != world.location) + (not t.on))
    host = world.where(lamp.name)
    return Command("go", host) if world.location != host else Command("use", lamp.name)


def _pick_two(world: World, spec: TaskSpec, held: Thing | None) -> Command:
    targets = world.of_kind(spec.target)
    # Fill the receptacle that already holds the most, else the cheapest to reach.
    target = max(targets, key=lambda r: (_count(world, r, spec.obj), -_reach_cost(world, r)))
    if held is not None:
        return _approach(world, target) or Command("put", held.name, target.name)
    candidates = [t.name for t in world.objects.values() if t.kind == spec.obj and t.name not in target.contents]
    return _fetch(world, candidates)


def _count(world: World, r: Receptacle, kind: str) -> int:
    return sum(world.objects[n].kind == kind for n in r.contents)
