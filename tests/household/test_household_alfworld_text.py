"""Our observations against ALFWorld's own text, so prompts and agents written for ALFWorld transfer.

Two sources, each cited where it is used:

* ReAct's few-shot ALFWorld transcripts (``prompts/alfworld_3prompts.json`` in ysymyth/ReAct at
  6bdb3a1, MIT licence beside the fixture in ``fixtures/react_alfworld/``): six real ALFWorld episodes,
  one per task type. Each is replayed through :class:`HouseholdEnv` in a room built from the facts the
  transcript shows (its receptacles and what it saw in them), and every observation must equal ALFWorld's
  after ReAct's own preprocessing (ReAct drops the welcome banner and the ``You arrive at loc N.`` prefix
  of ALFWorld before 0.4; ALFWorld 0.4+ names the receptacle there, which is what we print).
* ALFWorld's TextWorld grammar (``alfworld/data/alfred.twl2`` in alfworld/alfworld, 0.4.0 and later):
  the sentences those transcripts never show (examine, inventory, look, close, slice, ``move``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentgym_envs.household import render
from agentgym_envs.household.catalog import OPENABLE
from agentgym_envs.household.env import HouseholdEnv
from agentgym_envs.household.goals import instruction
from agentgym_envs.household.tasks import CLEAN, COOL, EXAMINE, HEAT, PICK_PLACE, PICK_TWO, TaskSpec
from agentgym_envs.household.world import Command, Receptacle, Thing, World

TRANSCRIPTS = json.loads((Path(__file__).parent / "fixtures" / "react_alfworld" / "transcripts.json").read_text())
#: Each transcript's goal as (task type, object kind, receptacle or lamp kind, which of the two templates).
GOALS = {
    "act_put_2": (PICK_PLACE, "soapbottle", "garbagecan", 0),
    "act_clean_0": (CLEAN, "lettuce", "diningtable", 0),
    "act_heat_1": (HEAT, "apple", "fridge", 0),
    "act_cool_0": (COOL, "pan", "stoveburner", 1),
    "act_puttwo_1": (PICK_TWO, "cellphone", "sofa", 0),
    "act_examine_1": (EXAMINE, "pen", "desklamp", 1),
}
_NAME = re.compile(r"a ([a-z]+ \d+)")
_VIEW = re.compile(r"(?:On the (?P<top>[a-z]+ \d+), you see|The (?P<inside>[a-z]+ \d+) is open\. In it, you see) "
                   r"(?P<list>.*)\.$")


def _natural(name: str) -> tuple[str, int]:
    kind, number = name.rsplit(" ", 1)
    return kind, int(number)


def _parse(transcript: str) -> tuple[str, list[tuple[str, str]]]:
    """The first observation (room view and task) and the (action, observation) pairs."""
    lines = transcript.strip().split("\n")
    actions = lines[2::2]
    assert all(line.startswith(">") for line in actions), actions
    return "\n".join(lines[:2]), [(a[1:].strip(), o) for a, o in zip(actions, lines[3::2])]


def _room(first: str, steps: list[tuple[str, str]]) -> World:
    """The room the transcript shows: its receptacles, in our generator's order (kind, number ascending),
    and each receptacle's contents as first seen, stored in reverse of ALFWorld's display order so that
    the test also checks that we sort for display."""
    names = sorted(_NAME.findall(first.split("\n")[0]), key=_natural)
    receptacles = {n: Receptacle(n, n.rsplit(" ", 1)[0]) for n in names}
    objects: dict[str, Thing] = {}
    for _, observation in steps:
        view = _VIEW.search(observation)
        if view is None:
            continue
        for name in reversed(_NAME.findall(view["list"])):
            if name not in objects:
                objects[name] = Thing(name, name.rsplit(" ", 1)[0])
                receptacles[view["top"] or view["inside"]].contents.append(name)
    return World("room", receptacles, objects)


def _env_in(world: World, spec: TaskSpec) -> tuple[HouseholdEnv, str]:
    """A HouseholdEnv playing ``world`` towards ``spec``, and its first observation."""
    env = HouseholdEnv()
    env.reset(seed=0)
    return env, env.use_world(world, spec)


def _as_react_saw_it(observation: str, action: str) -> str:
    """Our observation with the ``You arrive at X.`` of ALFWorld 0.4+ dropped, as ReAct dropped the
    ``You arrive at loc N.`` of the ALFWorld it ran."""
    if action.startswith("go to "):
        prefix = f"You arrive at {action[len('go to '):]}. "
        assert observation.startswith(prefix), observation
        return observation[len(prefix):]
    return observation


@pytest.mark.parametrize("name", sorted(GOALS))
def test_react_transcripts_replay_word_for_word(name: str) -> None:
    first, steps = _parse(TRANSCRIPTS[name])
    world = _room(first, steps)
    task_type, obj, target, phrasing = GOALS[name]
    spec = TaskSpec("train", 0, task_type, 1, obj, target, phrasing, 0)
    env, welcome = _env_in(world, spec)
    assert welcome.startswith("-= Welcome to TextWorld, ALFRED! =-\n\n")
    assert "\n".join(welcome.split("\n\n")[1:]) == first  # ReAct: '\n'.join(ob.split('\n\n')[1:])
    for i, (action, expected) in enumerate(steps):
        observation, reward, terminated, _, info = env.step(action)
        assert info["action_valid"], (action, observation)
        assert _as_react_saw_it(observation, action) == expected, f"step {i}: {action}"
        assert terminated == (i == len(steps) - 1)  # each transcript ends when ALFWorld said it was won
    assert reward == 1.0 and info["won"] is True


def _kitchen() -> World:
    """A hand-built room for the sentences the transcripts do not show."""
    things = ["apple 1", "apple 2", "mug 1", "book 1", "knife 1", "desklamp 1"]
    return World("kitchen", {
        "countertop 1": Receptacle("countertop 1", "countertop", contents=["apple 1", "knife 1", "apple 2", "mug 1"]),
        "cabinet 1": Receptacle("cabinet 1", "cabinet"),
        "cabinet 2": Receptacle("cabinet 2", "cabinet", contents=["book 1"]),
        "sidetable 1": Receptacle("sidetable 1", "sidetable", contents=["desklamp 1"]),
    }, {n: Thing(n, n.rsplit(" ", 1)[0]) for n in things})


# alfred.twl2, examineObject.feedback: the first rule whose condition holds.
EXAMINE_SENTENCES = [
    ({}, "There's nothing special about apple 1."),
    ({"cool": True}, "This is a cold apple 1."),
    ({"hot": True}, "This is a hot apple 1."),
    ({"clean": True}, "This is a clean apple 1."),
    ({"clean": True, "hot": True}, "This is a hot and clean apple 1."),
    ({"clean": True, "cool": True}, "This is a cool and clean apple 1."),
    ({"sliced": True}, "This is a sliced apple 1."),
    ({"sliced": True, "cool": True}, "This is a cool sliced apple 1."),
    ({"sliced": True, "hot": True}, "This is a hot sliced apple 1."),
    ({"sliced": True, "clean": True}, "This is a clean sliced apple 1."),
    ({"sliced": True, "clean": True, "hot": True}, "This is a hot and clean sliced apple 1."),
    ({"sliced": True, "clean": True, "cool": True}, "This is a cool and clean sliced apple 1."),
]


@pytest.mark.parametrize("state,sentence", EXAMINE_SENTENCES)
def test_examine_object_uses_alfworlds_sentence(state: dict, sentence: str) -> None:
    world = _kitchen()
    for flag, value in state.items():
        setattr(world.objects["apple 1"], flag, value)
    assert render.result(world, Command("examine", "apple 1")) == sentence


def test_examine_receptacle_objects_and_lamps() -> None:
    world = _kitchen()
    world.objects["mug 1"].cool = True  # ALFWorld's receptacle-object rule comes before the state rules
    assert render.describe_thing(world, "mug 1") == "This is a normal mug 1. In it, you see nothing."
    assert render.describe_thing(world, "desklamp 1") == "This desklamp 1 is off."
    world.objects["desklamp 1"].on = True
    assert render.describe_thing(world, "desklamp 1") == "This desklamp 1 is on."


def test_other_sentences_match_alfworlds_grammar() -> None:
    world = _kitchen()
    assert render.result(world, Command("look")) == (  # look.feedback, in the middle of the room
        "You are in the middle of a room. Looking quickly around you, you see a cabinet 2, a cabinet 1, "
        "a countertop 1, and a sidetable 1.")
    world.apply(Command("go", "countertop 1"))
    assert render.result(world, Command("go", "countertop 1")) == (  # GotoLocation (0.4+), list order
        "You arrive at countertop 1. On the countertop 1, you see a apple 2, a apple 1, a knife 1, and a mug 1.")
    assert render.result(world, Command("look")) == "You are facing the countertop 1. Next to it, you see nothing."
    assert render.result(world, Command("inventory")) == "You are not carrying anything."
    world.apply(Command("take", "knife 1", "countertop 1"))
    assert render.result(world, Command("inventory")) == "You are carrying: a knife 1."
    world.apply(Command("slice", "apple 1", "knife 1"))
    assert render.result(world, Command("slice", "apple 1", "knife 1")) == "You sliced the apple 1 with the knife 1."
    put = Command("put", "knife 1", "countertop 1")
    assert render.result(world, put) == "You put the knife 1 in/on the countertop 1."
    assert render.result(world, put, moved=True) == "You move the knife 1 to the countertop 1."
    world.apply(Command("go", "cabinet 2"))
    assert render.result(world, Command("examine", "cabinet 2")) == "The cabinet 2 is closed."
    world.apply(Command("open", "cabinet 2"))
    assert render.result(world, Command("close", "cabinet 2")) == "You close the cabinet 2."
    world.apply(Command("go", "sidetable 1"))
    world.apply(Command("use", "desklamp 1"))
    world.apply(Command("use", "desklamp 1"))
    assert render.result(world, Command("use", "desklamp 1")) == "You turn off the desklamp 1."


def test_env_answers_move_and_put_in_their_own_words() -> None:
    """``move X to Y`` (ALFWorld 0.4+) gets ALFWorld 0.4+'s answer; ``put X in/on Y`` the older one."""
    world = _kitchen()
    spec = TaskSpec("train", 0, PICK_PLACE, 1, "apple", "cabinet", 0, 0)
    env, _ = _env_in(world, spec)
    for action, answer in (("go to countertop 1", None), ("take apple 1 from countertop 1", None),
                           ("move apple 1 to countertop 1", "You move the apple 1 to the countertop 1."),
                           ("take apple 1 from countertop 1", None),
                           ("put apple 1 in/on countertop 1", "You put the apple 1 in/on the countertop 1."),
                           ("take apple 1 from countertop 1", None),
                           ("Move the apple1 to countertop 1.", "You move the apple 1 to the countertop 1.")):
        observation, _, _, _, info = env.step(action)
        assert info["action_valid"], (action, observation)
        if answer is not None:
            assert observation == answer


def test_anything_alfworld_cannot_do_starts_with_nothing_happens() -> None:
    env, _ = _env_in(_kitchen(), TaskSpec("train", 0, PICK_PLACE, 1, "apple", "cabinet", 0, 0))
    for action in ("dance", "take apple 9 from countertop 1", "go to cabinet 7", "open countertop 1"):
        observation, _, _, _, info = env.step(action)
        assert not info["action_valid"] and observation.startswith("Nothing happens."), (action, observation)


def test_fixture_rooms_use_only_openable_kinds_we_know() -> None:
    """Guards the replay's premise: the transcripts' closed receptacles are openable kinds here too."""
    for transcript in TRANSCRIPTS.values():
        for kind in re.findall(r"The ([a-z]+) \d+ is closed", transcript):
            assert kind in OPENABLE, kind
