"""ALFWorld's text for the world: the welcome text, receptacle views, and each command's result.

Every sentence follows ALFWorld's TextWorld grammar (``alfworld/data/alfred.twl2`` in alfworld/alfworld)
as ReAct's few-shot transcripts show it, so prompts and parsers written for ALFWorld transfer unchanged:

* lists read ``a apple 1, a bread 1, and a mug 2`` (``a`` even before a vowel, a comma before the last
  ``and``, ``nothing`` when empty), in ALFWorld's order: kinds alphabetically, numbers descending
  (``a cabinet 3, a cabinet 2, a cabinet 1, a countertop 1``);
* ``examine`` on an object uses ALFWorld's first matching sentence (``This is a hot and clean apple 1.``,
  ``This is a cold mug 1.``, ``There's nothing special about book 1.``); ALFWorld's movable receptacles
  (bowl, box, cup, mug, pan, plate, pot) always read ``This is a normal mug 1. In it, you see nothing.``
  whatever their state, as in ALFWorld, where that rule comes first (nothing is ever put inside them here);
* ``put X in/on Y`` (ALFWorld before 0.4, ReAct's prompts) is answered ``You put the X in/on the Y.``
  and ``move X to Y`` (ALFWorld 0.4+) ``You move the X to the Y.``;
* ``go to`` starts with ``You arrive at X.`` (ALFWorld 0.4+; older releases said ``loc 12``, which
  ReAct's code strips).

Each receptacle here stands at its own spot, so ``look`` at one reads ``You are facing the X. Next to it,
you see nothing.``; ALFWorld's rooms sometimes put two receptacles at one spot and then name both.
"""

from __future__ import annotations

from .catalog import LAMPS, RECEPTACLE_OBJECTS
from .world import Command, Receptacle, Thing, World

WELCOME = "-= Welcome to TextWorld, ALFRED! =-"


def display_order(names: list[str]) -> list[str]:
    """``names`` in ALFWorld's list order: kind ascending, then instance number descending."""
    return sorted(names, key=_order_key)


def _order_key(name: str) -> tuple[str, int]:
    kind, _, number = name.rpartition(" ")
    return (kind, -int(number)) if number.isdigit() else (name, 0)


def list_names(names: list[str]) -> str:
    """``a apple 1, a bread 1, and a mug 2`` (ALFWorld's list style and order), or ``nothing``."""
    if not names:
        return "nothing"
    items = [f"a {n}" for n in display_order(names)]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", and " + items[-1]


def room_view(world: World) -> str:
    return f"You are in the middle of a room. Looking quickly around you, you see {list_names(list(world.receptacles))}."


def welcome(world: World, instruction: str) -> str:
    return f"{WELCOME}\n\n{room_view(world)}\n\nYour task is to: {instruction}"


def receptacle_view(r: Receptacle) -> str:
    """What the agent sees of a receptacle it stands at: closed door, open door and contents, or top."""
    if not r.openable:
        return f"On the {r.name}, you see {list_names(r.contents)}."
    if not r.is_open:
        return f"The {r.name} is closed."
    return f"The {r.name} is open. In it, you see {list_names(r.contents)}."


def describe_thing(world: World, name: str) -> str:
    """``examine`` on an object: ALFWorld's first sentence whose condition holds, in ALFWorld's order."""
    thing = world.objects[name]
    if thing.kind in RECEPTACLE_OBJECTS:
        return f"This is a normal {name}. In it, you see nothing."
    adjective = _state_words(thing)
    if adjective:
        return f"This is a {adjective} {name}."
    if thing.kind in LAMPS:
        return f"This {name} is {'on' if thing.on else 'off'}."
    return f"There's nothing special about {name}."


def _state_words(thing: Thing) -> str:
    """``hot and clean sliced``, ``cool sliced``, ``cold``, ... or ``""``: the words ALFWorld uses for a
    state (a cool object alone is ``cold``; with other states it is ``cool``)."""
    temperature = "hot" if thing.hot else "cool" if thing.cool else ""
    if not (temperature or thing.clean):
        return "sliced" if thing.sliced else ""
    words = " and ".join(w for w in (temperature, "clean" if thing.clean else "") if w)
    if thing.sliced:
        return f"{words} sliced"
    return "cold" if words == "cool" else words


def result(world: World, command: Command, moved: bool = False) -> str:
    """The observation after ``command`` was applied to ``world``; ``moved``: the agent wrote the ``put``
    as ``move X to Y`` (newer ALFWorld), which ALFWorld answers in those words."""
    verb, obj, target = command
    if verb == "go":
        return f"You arrive at {obj}. {receptacle_view(world.receptacles[obj])}"
    if verb == "open":
        return f"You open the {obj}. {receptacle_view(world.receptacles[obj])}"
    if verb == "close":
        return f"You close the {obj}."
    if verb == "take":
        return f"You pick up the {obj} from the {target}."
    if verb == "put":
        return f"You move the {obj} to the {target}." if moved else f"You put the {obj} in/on the {target}."
    if verb in ("clean", "heat", "cool"):
        return f"You {verb} the {obj} using the {target}."
    if verb == "slice":
        return f"You sliced the {obj} with the {target}."
    if verb == "use":
        return f"You turn {'on' if world.objects[obj].on else 'off'} the {obj}."
    if verb == "examine":
        return receptacle_view(world.receptacles[obj]) if obj in world.receptacles else describe_thing(world, obj)
    if verb == "inventory":
        return f"You are carrying: a {world.holding}." if world.holding else "You are not carrying anything."
    return _look(world)


def _look(world: World) -> str:
    if world.location is None:
        return room_view(world)
    return f"You are facing the {world.location}. Next to it, you see nothing."
