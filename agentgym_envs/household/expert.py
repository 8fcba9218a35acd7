"""The scripted expert: the next command towards the goal, from any state, using hidden knowledge.

The expert is a function of the current world state (not of a plan made at reset), so it also recovers
after random actions, from snapshots, and mid-episode hand-offs. It knows where every object is, which is
what ALFWorld's handcoded expert knows too. ``go to`` costs one step whatever the distance, so choices
minimise the number of commands: a goal object already at hand or behind an open door wins, a goal
object that already has the required state (clean/hot/cool) saves the trip to the appliance.
"""

from __future__ import annotations

from .catalog import APPLIANCE
from .goals import STATE
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
