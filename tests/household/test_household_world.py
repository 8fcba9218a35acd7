"""The household world model, generator, grammar and rendering, without the env adapter."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym_envs.household import grammar, render, rng
from agentgym_envs.household.catalog import OBJECT_KINDS, OPENABLE
from agentgym_envs.household.generate import build_world
from agentgym_envs.household.goals import goal_met, subgoals_met
from agentgym_envs.household.tasks import SPLITS, task_spec, task_types
from agentgym_envs.household.world import Command, Receptacle, Thing, World


def _world(split: str = "train", index: int = 0) -> World:
    return build_world(task_spec(split, index))


def _assert_conserved(world: World) -> None:
    """Every object is in exactly one place: one receptacle or the agent's hand."""
    assert sorted(world.placements()) == sorted(world.objects)


@pytest.mark.parametrize("module", [grammar, rng])
def test_doctests(module) -> None:
    assert doctest.testmod(module).failed == 0


def test_generated_worlds_are_sane() -> None:
    for split in SPLITS:
        for index in range(0, len(task_types(split)), 7):
            spec = task_spec(split, index)
            world = build_world(spec)
            _assert_conserved(world)
            assert world.location is None and world.holding is None
            assert all(not r.is_open for r in world.receptacles.values())
            assert all(r.kind in OPENABLE or not r.openable for r in world.receptacles.values())
            assert any(t.kind == spec.obj for t in world.objects.values()), spec
            assert not goal_met(world, spec) and subgoals_met(world, spec) == set(), spec


def test_generation_is_deterministic() -> None:
    assert _world("valid_seen", 3) == _world("valid_seen", 3)
    assert _world("valid_seen", 3) != _world("valid_seen", 4)


@settings(max_examples=60, deadline=None)
@given(index=st.integers(0, 3552), choices=st.lists(st.integers(0, 10_000), max_size=80))
def test_objects_are_conserved_under_any_command_sequence(index: int, choices: list[int]) -> None:
    world = _world("train", index)
    for choice in choices:
        commands = world.admissible()
        world.apply(commands[choice % len(commands)])
        _assert_conserved(world)
        assert world.holding is None or world.where(world.holding) is None


def test_admissible_commands_follow_the_rules() -> None:
    world = _world("valid_seen", 0)
    assert Command("inventory") in world.admissible() and Command("look") in world.admissible()
    assert all(c.verb == "go" for c in world.admissible()[: len(world.receptacles)])
    closed = next(r for r in world.receptacles.values() if r.openable)
    world.apply(Command("go", closed.name))
    local = world.local_commands()
    assert Command("open", closed.name) in local
    assert not any(c.verb == "take" for c in local), "nothing can be taken from a closed receptacle"
    assert Command("go", closed.name) not in world.admissible()


def test_transform_commands_need_the_appliance_and_the_object_in_hand() -> None:
    spec = next(task_spec("train", i) for i in range(200) if task_types("train")[i] == "pick_heat_then_place")
    world = build_world(spec)
    egg = next(t for t in world.objects.values() if t.kind == spec.obj)
    world.apply(Command("go", world.where(egg.name)))
    if not world.here().accessible:
        world.apply(Command("open", world.location))
    world.apply(Command("take", egg.name, world.location))
    microwave = world.of_kind("microwave")[0].name
    assert Command("heat", egg.name, microwave) not in world.admissible()
    world.apply(Command("go", microwave))
    assert Command("heat", egg.name, microwave) in world.admissible()
    world.apply(Command("heat", egg.name, microwave))
    assert world.objects[egg.name].hot and "hot" in subgoals_met(world, spec)


def test_parser_accepts_alfworld_forms_and_near_misses() -> None:
    put = Command("put", "apple 1", "fridge 1")
    for text in ("put apple 1 in/on fridge 1", "put apple 1 in fridge 1", "put apple 1 on fridge 1",
                 "Put the apple 1 into the fridge 1.", "move apple1 to fridge1", "  put   apple 1  onto fridge 1 "):
        assert grammar.parse(text) == put, text
    assert grammar.parse("take apple 1") == Command("take", "apple 1", None)
    assert grammar.parse("go fridge 1") == Command("go", "fridge 1", None)
    assert grammar.parse("look at bowl 2") == Command("examine", "bowl 2", None)
    for text in ("", "dance", "go to", "put", "take apple 1 from", "x" * 500, "打开 冰箱", "go to fridge 1; rm -rf /"):
        assert grammar.parse(text) is None, text


def test_canonical_forms_round_trip_through_the_parser() -> None:
    world = _world("valid_unseen", 0)
    for choice in range(40):
        for command in world.admissible():
            assert grammar.parse(grammar.format_command(command)) == command
        world.apply(world.admissible()[(choice * 7919) % len(world.admissible())])


def test_resolve_unnumbered_and_missing_names() -> None:
    admissible = [Command("go", "cabinet 1"), Command("go", "cabinet 2"), Command("go", "fridge 1"),
                  Command("take", "apple 1", "countertop 1")]
    assert grammar.resolve(Command("go", "fridge", None), admissible) == [Command("go", "fridge 1")]
    assert len(grammar.resolve(Command("go", "cabinet", None), admissible)) == 2
    assert grammar.resolve(Command("take", "apple 1", None), admissible) == [admissible[-1]]
    assert grammar.resolve(Command("go", "fridge 2", None), admissible) == []


def test_rendering_matches_alfworld_phrasing() -> None:
    assert render.list_names([]) == "nothing"
    assert render.list_names(["apple 1"]) == "a apple 1"
    assert render.list_names(["apple 1", "mug 2"]) == "a apple 1, and a mug 2"
    world = _world("train", 1)
    assert render.welcome(world, "put a apple in fridge.").startswith(
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you see a ")
    closed = next(r for r in world.receptacles.values() if r.openable)
    world.apply(Command("go", closed.name))
    assert render.result(world, Command("go", closed.name)) == f"You arrive at {closed.name}. The {closed.name} is closed."
    world.apply(Command("open", closed.name))
    assert render.result(world, Command("open", closed.name)).startswith(
        f"You open the {closed.name}. The {closed.name} is open. In it, you see ")


def test_catalogue_is_consistent() -> None:
    for kind in OBJECT_KINDS.values():
        assert kind.name.isalpha() and kind.name.islower()
        assert kind.pickupable == bool(kind.rooms), kind.name


def test_a_hand_built_world_slices_and_lights() -> None:
    """The world model is plain objects: a room can be written by hand, e.g. for a unit test."""
    world = World("kitchen", {
        "countertop 1": Receptacle("countertop 1", "countertop", contents=["apple 1", "knife 1"]),
        "sidetable 1": Receptacle("sidetable 1", "sidetable", contents=["desklamp 1"]),
    }, {name: Thing(name, name.split()[0]) for name in ("apple 1", "knife 1", "desklamp 1")})
    world.apply(Command("go", "countertop 1"))
    world.apply(Command("take", "knife 1", "countertop 1"))
    assert Command("slice", "apple 1", "knife 1") in world.admissible()
    world.apply(Command("slice", "apple 1", "knife 1"))
    assert world.objects["apple 1"].sliced and Command("slice", "apple 1", "knife 1") not in world.admissible()
    world.apply(Command("go", "sidetable 1"))
    assert Command("take", "desklamp 1", "sidetable 1") not in world.admissible()  # lamps are fixtures
    world.apply(Command("use", "desklamp 1"))
    assert world.objects["desklamp 1"].on and render.result(world, Command("use", "desklamp 1")) == "You turn on the desklamp 1."
    _assert_conserved(world)
