"""Household configs: a task type, a floorplan, the goal object and receptacle kinds, and the room's seed.

A config fixes one ALFWorld-style task exactly (:class:`~agentgym_envs.household.tasks.TaskSpec`): the
world is built from it by the household family's own generator, so objects and distractors are placed
under the same rules as every shipped task (solvable, not already solved). The instance is the spec's
content ``(task_type, floorplan, object, target, seed)``; the phrasing is cosmetic and left out, so
rewording a held-out goal does not make it new. Held out: every ``valid_seen`` and ``valid_unseen``
task. Reserved: the floorplans and (object, receptacle) pairs that only ``valid_unseen`` uses — a
training task built on them would leak the out-of-distribution split.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from agentgym_envs.core import Task
from agentgym_envs.household.catalog import FLOORPLANS, LAMPS, OBJECT_KINDS, ROOM_RECEPTACLES, UNSEEN_FLOORPLANS
from agentgym_envs.household.env import HouseholdEnv
from agentgym_envs.household.goals import instruction
from agentgym_envs.household.tasks import SPLIT_COUNTS, TASK_TYPES, TaskSpec, build_layout, goal_pairs, held_out, task_spec

from .base import ConfigError, Family, pick

ALL_FLOORPLANS = tuple(sorted(fp for plans in FLOORPLANS.values() for fp in plans))
SEEN_FLOORPLANS = tuple(fp for fp in ALL_FLOORPLANS if fp not in UNSEEN_FLOORPLANS)
RECEPTACLE_KINDS = tuple(sorted({kind for specs in ROOM_RECEPTACLES.values() for kind, _, _ in specs}))
HELD_OUT_SPLITS = ("valid_seen", "valid_unseen")
DESIGN_SPLIT = "design"

SCHEMA: dict = {
    "type": "object",
    "properties": {
        "task_type": {"type": "string", "enum": list(TASK_TYPES)},
        "floorplan": {"type": "integer", "minimum": 1, "maximum": 430,
                      "description": "kitchens 1-30, living rooms 201-230, bedrooms 301-330, bathrooms 401-430"},
        "object": {"type": "string", "enum": sorted(OBJECT_KINDS)},
        "target": {"type": "string", "enum": sorted({*RECEPTACLE_KINDS, *LAMPS}),
                   "description": "the goal receptacle kind (a lamp kind for look_at_obj_in_light)"},
        "seed": {"type": "integer", "minimum": 0, "maximum": 2**64 - 1},
        "phrasing": {"type": "integer", "enum": [0, 1]},
    },
    "required": ["task_type", "floorplan", "object", "target", "seed"],
    "additionalProperties": False,
}


class DesignedHousehold(HouseholdEnv):
    """The household env playing one configured task on every reset (the oracle expert included)."""

    def __init__(self, spec: TaskSpec, render_mode: str | None = None):
        super().__init__(split="train", render_mode=render_mode)
        self.tasks = (Task(spec.task_id, instruction(spec), {"spec": spec}),)
        self.task = self.tasks[0]


def spec_of(config: dict) -> TaskSpec:
    """The config's task spec; :class:`ConfigError` when the floorplan cannot host that goal."""
    task_type, floorplan, obj, target = config["task_type"], config["floorplan"], config["object"], config["target"]
    if floorplan not in ALL_FLOORPLANS:
        raise ConfigError(f"expected a floorplan in 1-30, 201-230, 301-330 or 401-430, got {floorplan}")
    pairs = goal_pairs(build_layout(floorplan), task_type, seen=floorplan not in UNSEEN_FLOORPLANS)
    if (obj, target) not in pairs:
        shown = ", ".join(f"{o}->{t}" for o, t in pairs[:8]) or "none"
        raise ConfigError(f"expected an (object, target) pair that floorplan {floorplan} supports for {task_type} "
                          f"(e.g. {shown}), got {obj}->{target}")
    return TaskSpec(DESIGN_SPLIT, 0, task_type, floorplan, obj, target, int(config.get("phrasing", 0)), int(config["seed"]))


def build(config: dict) -> DesignedHousehold:
    return DesignedHousehold(spec_of(config))


def instance_key(config: dict) -> list[Any]:
    return [config["task_type"], config["floorplan"], config["object"], config["target"], int(config["seed"])]


def held_out_instances() -> list[tuple[str, list[Any]]]:
    specs = [task_spec(split, i) for split in HELD_OUT_SPLITS for i in range(sum(SPLIT_COUNTS[split]))]
    return [(s.task_id, [s.task_type, s.floorplan, s.obj, s.target, s.seed]) for s in specs]


def reserved(config: dict) -> str | None:
    if config["floorplan"] in UNSEEN_FLOORPLANS:
        return f"floorplan {config['floorplan']} is reserved for valid_unseen (its floorplans are never trained on)"
    if held_out(config["object"], config["target"]):
        return f"the pair {config['object']}->{config['target']} is reserved for valid_unseen"
    return None


@lru_cache(maxsize=None)
def _supported(task_type: str) -> tuple[tuple[int, tuple[tuple[str, str], ...]], ...]:
    options = ((fp, tuple(goal_pairs(build_layout(fp), task_type, seen=True))) for fp in SEEN_FLOORPLANS)
    return tuple((fp, pairs) for fp, pairs in options if pairs)


def example(rng: np.random.Generator) -> dict:
    task_type = pick(rng, TASK_TYPES)
    floorplan, pairs = pick(rng, _supported(task_type))
    obj, target = pick(rng, pairs)
    return {"task_type": task_type, "floorplan": floorplan, "object": obj, "target": target,
            "seed": int(rng.integers(2**31)), "phrasing": int(rng.integers(2))}


FAMILY = Family(
    name="household",
    description=("An ALFWorld-style household task: task_type (one of six), floorplan (a room layout id), the goal "
                 "object kind and target receptacle kind (a lamp kind for look_at_obj_in_light), and a seed that "
                 "places the objects. The floorplan must have a place for that goal. Held out: every valid_seen "
                 "and valid_unseen task; reserved: valid_unseen's floorplans and object/receptacle pairs."),
    schema=SCHEMA, max_steps=50, build=build, instance_key=instance_key, held_out=held_out_instances,
    example=example, reserved=reserved,
)
