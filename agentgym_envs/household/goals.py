"""Goals: ALFWorld's goal text, the success test, and subgoals for progress metrics and dense reward.

Goals are about kinds, as in ALFWorld: "put some apple on diningtable." is met by *any* apple in *any*
diningtable. The tests are functions of the world state alone, checked after every valid action.

Subgoals (each a state predicate; ``done`` is the goal itself) and their dense-reward weights:

=========================  ===========================================================  ===============
task type                  subgoals                                                     weights
=========================  ===========================================================  ===============
pick_and_place             take (hold a goal object), done                              0.25, 0.75
look_at_obj_in_light       take, done (hold it where a lamp of the kind is on)          0.25, 0.75
pick_clean/heat/cool_...   take, clean/hot/cool (some goal object is), done             0.2, 0.3, 0.5
pick_two_obj_and_place     take, place_one (one goal object in a goal receptacle), done 0.15, 0.35, 0.5
=========================  ===========================================================  ===============

A subgoal pays its weight the first time it holds in an episode; ``done`` pays whatever is left of 1.0,
so an episode's dense return is at most 1.0 and exactly 1.0 when it is won.
"""

from __future__ import annotations

from .tasks import CLEAN, COOL, EXAMINE, HEAT, PICK_PLACE, PICK_TWO, TaskSpec
from .world import World

#: Two phrasings per type, as ALFWorld's goal templates.
TEMPLATES: dict[str, tuple[str, str]] = {
    PICK_PLACE: ("put a {obj} in {target}.", "put some {obj} on {target}."),
    EXAMINE: ("look at {obj} under the {target}.", "examine the {obj} with the {target}."),
    CLEAN: ("put a clean {obj} in {target}.", "clean some {obj} and put it in {target}."),
    HEAT: ("put a hot {obj} in {target}.", "heat some {obj} and put it in {target}."),
    COOL: ("put a cool {obj} in {target}.", "cool some {obj} and put it in {target}."),
    PICK_TWO: ("put two {obj} in {target}.", "find two {obj} and put them in {target}."),
}
#: The object state a transform type requires (a :class:`~agentgym_envs.household.world.Thing` field).
STATE = {CLEAN: "clean", HEAT: "hot", COOL: "cool"}
DONE = "done"
SUBGOALS: dict[str, tuple[tuple[str, float], ...]] = {
    PICK_PLACE: (("take", 0.25), (DONE, 0.75)),
    EXAMINE: (("take", 0.25), (DONE, 0.75)),
    CLEAN: (("take", 0.2), ("clean", 0.3), (DONE, 0.5)),
    HEAT: (("take", 0.2), ("hot", 0.3), (DONE, 0.5)),
    COOL: (("take", 0.2), ("cool", 0.3), (DONE, 0.5)),
    PICK_TWO: (("take", 0.15), ("place_one", 0.35), (DONE, 0.5)),
}


def instruction(spec: TaskSpec) -> str:
    return TEMPLATES[spec.task_type][spec.phrasing].format(obj=spec.obj, target=spec.target)


def goal_met(world: World, spec: TaskSpec) -> bool:
    if spec.task_type == EXAMINE:
        return _in_light(world, spec)
    if spec.task_type == PICK_TWO:
        return _most_in_one_target(world, spec) >= 2
    state = STATE.get(spec.task_type)
    return any(
        world.objects[name].kind == spec.obj and (state is None or getattr(world.objects[name], state))
        for r in world.receptacles.values() if r.kind == spec.target for name in r.contents
    )


def subgoals_met(world: World, spec: TaskSpec) -> set[str]:
    """The subgoals (``done`` included) that hold in the current state."""
    met = set()
    held = world.objects[world.holding] if world.holding is not None else None
    if held is not None and held.kind == spec.obj:
        met.add("take")
    state = STATE.get(spec.task_type)
    if state is not None and any(t.kind == spec.obj and getattr(t, state) for t in world.objects.values()):
        met.add(state)
    if spec.task_type == PICK_TWO and _most_in_one_target(world, spec) >= 1:
        met.add("place_one")
    if goal_met(world, spec):
        met.add(DONE)
    return met


def _in_light(world: World, spec: TaskSpec) -> bool:
    here = world.here()
    if here is None or world.holding is None or world.objects[world.holding].kind != spec.obj:
        return False
    return any(world.objects[n].kind == spec.target and world.objects[n].on for n in here.contents)


def _most_in_one_target(world: World, spec: TaskSpec) -> int:
    counts = [
        sum(world.objects[n].kind == spec.obj for n in r.contents)
        for r in world.receptacles.values() if r.kind == spec.target
    ]
    return max(counts, default=0)
