"""Task sets: split sizes, stable ids, and the held-out floorplans and pairs of ``valid_unseen``."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from agentgym_envs.household.catalog import LAMPS, UNSEEN_FLOORPLANS
from agentgym_envs.household.env import HouseholdEnv
from agentgym_envs.household.generate import build_world
from agentgym_envs.household.goals import instruction
from agentgym_envs.household.tasks import SPLIT_COUNTS, TASK_TYPES, held_out, task_indices, task_spec, task_types


def _specs(split: str):
    return [task_spec(split, i) for i in range(len(task_types(split)))]


def test_split_sizes_mirror_alfworld() -> None:
    sizes = {split: len(task_types(split)) for split in SPLIT_COUNTS}
    assert sizes == {"train": 3553, "valid_seen": 140, "valid_unseen": 134}
    for split, counts in SPLIT_COUNTS.items():
        assert Counter(task_types(split)) == dict(zip(TASK_TYPES, counts))
    assert sum(len(task_indices("train", t)) for t in TASK_TYPES) == 3553


def test_task_ids_are_stable() -> None:
    """Pinned tasks: if this fails, a change altered existing task ids; bump the env version instead."""
    spec = task_spec("train", 0)
    assert (spec.task_type, spec.floorplan, spec.obj, spec.target) == PINNED_TRAIN_0
    assert instruction(task_spec("valid_unseen", 0)) == PINNED_UNSEEN_0_INSTRUCTION


PINNED_TRAIN_0 = ("pick_heat_then_place", 3, "cup", "shelf")
PINNED_UNSEEN_0_INSTRUCTION = "put a hot cup in cabinet."


def test_valid_unseen_layouts_and_pairs_never_appear_in_train() -> None:
    seen = _specs("train") + _specs("valid_seen")
    unseen = _specs("valid_unseen")
    assert {s.floorplan for s in seen}.isdisjoint({s.floorplan for s in unseen})
    assert all(s.floorplan in UNSEEN_FLOORPLANS for s in unseen)
    seen_goals = {(s.obj, s.target) for s in seen}
    unseen_goals = {(s.obj, s.target) for s in unseen}
    assert seen_goals.isdisjoint(unseen_goals)
    assert all(held_out(*pair) for pair in unseen_goals) and not any(held_out(*pair) for pair in seen_goals)
    # ... and no train room ever shows a held-out pair, not even as a movable object's starting place
    # (lamps are fixtures of their floorplan, and every seen floorplan is unseen-free anyway).
    for spec in seen[::5]:
        world = build_world(spec)
        for r in world.receptacles.values():
            kinds = [world.objects[n].kind for n in r.contents if world.objects[n].kind not in LAMPS]
            assert not any(held_out(kind, r.kind) for kind in kinds), (spec, r)


def test_every_task_type_occurs_in_every_room_it_can() -> None:
    rooms = {t: {task_spec("train", i).floorplan // 100 for i in task_indices("train", t)} for t in TASK_TYPES}
    assert rooms["pick_and_place"] == {0, 2, 3, 4} and rooms["pick_two_obj_and_place"] == {0, 2, 3, 4}
    assert rooms["pick_heat_then_place"] == {0} and rooms["pick_cool_then_place"] == {0}
    assert rooms["pick_clean_then_place"] == {0, 4} and rooms["look_at_obj_in_light"] == {2, 3}


def test_per_type_task_sets_keep_split_ids() -> None:
    env = HouseholdEnv(split="valid_seen", task_type="pick_heat_then_place")
    assert env.num_tasks == 16
    _, info = env.reset(options={"task_index": 3})
    assert info["task_id"] == f"household/valid_seen/{task_indices('valid_seen', 'pick_heat_then_place')[3]}"
    assert env.task_spec.task_type == "pick_heat_then_place"


def test_bad_split_or_type_is_explained() -> None:
    with pytest.raises(ValueError, match="split must be one of train, valid_seen, valid_unseen"):
        HouseholdEnv(split="test")
    with pytest.raises(ValueError, match="task_type must be one of"):
        HouseholdEnv(task_type="juggle")
    with pytest.raises(ValueError, match=r"task_index must be an int in \[0, 140\)"):
        HouseholdEnv(split="valid_seen").reset(options={"task_index": 140})
