"""ALFWorld-style text for the world: the welcome text, receptacle views, and each command's result.

Phrasing copies ALFWorld's (including its "a apple 1" and the comma before the last "and"), so prompts
and parsers written for ALFWorld transfer unchanged.
"""

from __future__ import annotations

from .world import Command, Receptacle, World

WELCOME = "-= Welcome to TextWorld, ALFRED! =-"


def list_names(names: list[str]) -> str:
    """``a apple 1, a bread 1, and a mug 2`` (ALFWorld's list style), or ``nothing``."""
    if not names:
        return "nothing"
    items = [f"a {n}" for n in names]
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
    """``examine`` on a held object: its visible state."""
    thing = world.objects[name]
    flags = (("sliced", thing.sliced), ("clean", thing.clean), ("hot", thing.hot), ("cool", thing.cool))
    states = [state for state, on in flags if on]
    return f"This is a {', '.join(states) if states else 'normal'} {name}."


def result(world: World, command: Command) -> str:
    """The observation after ``command`` was applied to ``world``."""
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
        return f"You put the {obj} in/on the {target}."
    if verb in ("clean", "heat", "cool"):
        return f"You {verb} the {obj} using the {target}."
    if verb == "slice":
        return f"You slice the {obj} with the {target}."
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
