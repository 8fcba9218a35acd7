"""Static data of the household world: rooms, receptacle kinds, object kinds and their properties.

Names follow ALFWorld (and AI2-THOR under it): lower-case kinds without spaces (``sinkbasin``,
``butterknife``), instances numbered per kind (``cabinet 3``). Everything here is immutable data read by
the generator, the rules and the expert; nothing in it changes during an episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

ROOMS = ("kitchen", "livingroom", "bedroom", "bathroom")

#: Receptacle kinds with a door or lid: they start closed, and their contents show only when open.
OPENABLE = frozenset({"cabinet", "drawer", "fridge", "microwave", "safe"})

#: The appliance each transforming verb needs (``clean X with sinkbasin 1`` …).
APPLIANCE = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}

#: Light sources: fixed objects toggled with ``use``; ``look_at_obj_in_light`` goals name one.
LAMPS = ("desklamp", "floorlamp")

#: ALFWorld's movable receptacles (its ``MOVABLE_RECEPTACLES``): ``examine`` describes them as containers
#: ("This is a normal mug 1. In it, you see nothing."), whatever their state. Nothing is put inside them here.
RECEPTACLE_OBJECTS = frozenset({"bowl", "box", "cup", "mug", "pan", "plate", "pot"})

#: Tools that can ``slice`` a sliceable object.
SLICERS = frozenset({"knife", "butterknife"})

#: room -> ((receptacle kind, fewest, most), ...) from which each floorplan draws its furniture.
ROOM_RECEPTACLES: dict[str, tuple[tuple[str, int, int], ...]] = {
    "kitchen": (
        ("cabinet", 3, 9), ("coffeemachine", 0, 1), ("countertop", 1, 3), ("diningtable", 0, 2),
        ("drawer", 1, 5), ("fridge", 1, 1), ("garbagecan", 1, 1), ("microwave", 1, 1), ("shelf", 0, 3),
        ("sinkbasin", 1, 1), ("stoveburner", 2, 4), ("toaster", 0, 1),
    ),
    "livingroom": (
        ("armchair", 0, 2), ("cabinet", 0, 4), ("coffeetable", 1, 1), ("diningtable", 0, 1),
        ("drawer", 0, 4), ("dresser", 0, 1), ("garbagecan", 1, 1), ("ottoman", 0, 1), ("safe", 0, 1),
        ("shelf", 0, 4), ("sidetable", 1, 2), ("sofa", 1, 1), ("tvstand", 0, 1),
    ),
    "bedroom": (
        ("armchair", 0, 1), ("bed", 1, 1), ("desk", 0, 1), ("drawer", 2, 6), ("dresser", 1, 1),
        ("garbagecan", 1, 1), ("laundryhamper", 0, 1), ("safe", 0, 1), ("shelf", 0, 5), ("sidetable", 1, 2),
    ),
    "bathroom": (
        ("bathtubbasin", 0, 1), ("cabinet", 2, 4), ("countertop", 1, 1), ("drawer", 0, 4),
        ("garbagecan", 1, 1), ("handtowelholder", 0, 2), ("shelf", 0, 2), ("sinkbasin", 1, 2),
        ("toilet", 1, 1), ("toiletpaperhanger", 1, 1), ("towelholder", 0, 1),
    ),
}

#: Receptacle kinds a lamp may stand on (the rooms that have lamps are those that have these).
LAMP_HOSTS = ("desk", "sidetable", "dresser")

#: ALFRED floorplan numbers: kitchens 1-30, living rooms 201-230, bedrooms 301-330, bathrooms 401-430.
FLOORPLANS: dict[str, tuple[int, ...]] = {
    room: tuple(range(first, first + 30)) for room, first in zip(ROOMS, (1, 201, 301, 401))
}
#: Floorplans that only ``valid_unseen`` uses (ALFRED's unseen scenes 10/219/308/424, plus two per room).
UNSEEN_FLOORPLANS = frozenset({10, 17, 28, 203, 219, 226, 308, 315, 323, 407, 412, 424})


@dataclass(frozen=True)
class ObjectKind:
    """What an object kind can do and where it is found (``homes``: receptacle kinds, any room)."""

    name: str
    rooms: frozenset[str]
    homes: frozenset[str]
    cleanable: bool = False
    heatable: bool = False
    coolable: bool = False
    sliceable: bool = False
    pickupable: bool = True


_K, _L, _B, _T = "kitchen", "livingroom", "bedroom", "bathroom"
_KITCHEN_TOP = "countertop diningtable"
_FOOD = f"{_KITCHEN_TOP} fridge sinkbasin microwave garbagecan"
_DISH = f"{_KITCHEN_TOP} cabinet shelf sinkbasin microwave fridge"
_UTENSIL = f"{_KITCHEN_TOP} drawer sinkbasin"
_SMALL = "sofa armchair coffeetable sidetable desk dresser bed drawer shelf diningtable ottoman tvstand"
_TOILETRY = "countertop cabinet shelf toilet drawer"


def _kind(name: str, rooms: str, homes: str, flags: str = "") -> ObjectKind:
    """Compact constructor: ``flags`` holds c(leanable) h(eatable) k (coolable) s(liceable)."""
    return ObjectKind(
        name, frozenset(rooms.split()), frozenset(homes.split()),
        cleanable="c" in flags, heatable="h" in flags, coolable="k" in flags, sliceable="s" in flags,
    )


OBJECT_KINDS: dict[str, ObjectKind] = {k.name: k for k in (
    _kind("apple", _K, _FOOD, "chks"),
    _kind("bread", _K, f"{_KITCHEN_TOP} fridge cabinet microwave", "hks"),
    _kind("egg", _K, _FOOD, "chk"),
    _kind("lettuce", _K, f"{_KITCHEN_TOP} fridge sinkbasin garbagecan", "cks"),
    _kind("potato", _K, _FOOD, "chks"),
    _kind("tomato", _K, _FOOD, "chks"),
    _kind("mug", _K, f"{_DISH} coffeemachine", "chk"),
    _kind("cup", _K, _DISH, "chk"),
    _kind("bowl", f"{_K} {_L}", f"{_DISH} coffeetable sidetable", "ck"),
    _kind("plate", f"{_K} {_L}", f"{_DISH} coffeetable sidetable", "chk"),
    _kind("pan", _K, f"stoveburner {_KITCHEN_TOP} cabinet fridge sinkbasin", "ck"),
    _kind("pot", _K, f"stoveburner {_KITCHEN_TOP} cabinet fridge sinkbasin shelf", "ck"),
    _kind("kettle", _K, f"stoveburner {_KITCHEN_TOP} cabinet", "c"),
    _kind("knife", _K, _UTENSIL, "c"),
    _kind("butterknife", _K, _UTENSIL, "c"),
    _kind("fork", _K, _UTENSIL, "c"),
    _kind("spoon", _K, _UTENSIL, "c"),
    _kind("spatula", _K, _UTENSIL, "c"),
    _kind("ladle", _K, _UTENSIL, "c"),
    _kind("dishsponge", f"{_K} {_T}", f"{_UTENSIL} cabinet {_TOILETRY}", "c"),
    _kind("saltshaker", _K, f"{_KITCHEN_TOP} cabinet drawer shelf"),
    _kind("peppershaker", _K, f"{_KITCHEN_TOP} cabinet drawer shelf"),
    _kind("winebottle", _K, f"{_KITCHEN_TOP} cabinet fridge shelf", "k"),
    _kind("soapbottle", f"{_K} {_T}", f"{_KITCHEN_TOP} {_TOILETRY} sinkbasin"),
    _kind("cellphone", f"{_L} {_B}", _SMALL),
    _kind("book", f"{_L} {_B}", _SMALL),
    _kind("creditcard", f"{_L} {_B}", _SMALL),
    _kind("keychain", f"{_L} {_B}", f"{_SMALL} safe"),
    _kind("pen", f"{_L} {_B}", _SMALL),
    _kind("pencil", f"{_L} {_B}", _SMALL),
    _kind("cd", f"{_L} {_B}", f"{_SMALL} safe"),
    _kind("remotecontrol", _L, _SMALL),
    _kind("alarmclock", _B, "desk dresser sidetable shelf"),
    _kind("laptop", f"{_L} {_B}", "sofa armchair coffeetable desk bed dresser diningtable ottoman"),
    _kind("pillow", f"{_L} {_B}", "sofa armchair bed ottoman"),
    _kind("newspaper", _L, "sofa armchair coffeetable sidetable diningtable ottoman garbagecan"),
    _kind("statue", f"{_L} {_B}", "coffeetable sidetable dresser shelf tvstand desk cabinet"),
    _kind("vase", f"{_L} {_B}", "coffeetable sidetable dresser shelf tvstand desk cabinet safe"),
    _kind("watch", f"{_L} {_B}", f"{_SMALL} safe"),
    _kind("box", _L, "sofa armchair coffeetable sidetable dresser shelf diningtable tvstand"),
    _kind("tissuebox", f"{_L} {_T}", f"coffeetable sidetable dresser shelf {_TOILETRY}"),
    _kind("candle", f"{_L} {_T}", f"coffeetable sidetable shelf {_TOILETRY} bathtubbasin"),
    _kind("spraybottle", _T, f"{_TOILETRY} garbagecan"),
    _kind("toiletpaper", _T, f"{_TOILETRY} toiletpaperhanger garbagecan"),
    _kind("soapbar", _T, f"{_TOILETRY} sinkbasin bathtubbasin garbagecan", "c"),
    _kind("cloth", _T, f"{_TOILETRY} sinkbasin bathtubbasin garbagecan", "c"),
    _kind("handtowel", _T, "handtowelholder countertop cabinet shelf"),
    _kind("towel", _T, "towelholder bathtubbasin shelf cabinet"),
)}
for _lamp in LAMPS:
    OBJECT_KINDS[_lamp] = ObjectKind(_lamp, frozenset(), frozenset(), pickupable=False)

#: Object kinds a ``look_at_obj_in_light`` goal may name (ALFWorld's examine targets).
EXAMINABLE = frozenset({
    "alarmclock", "book", "bowl", "box", "cd", "cellphone", "creditcard", "keychain", "laptop",
    "newspaper", "pen", "pencil", "pillow", "plate", "remotecontrol", "statue", "vase", "watch",
})


@cache
def room_object_kinds(room: str) -> tuple[str, ...]:
    """Pickupable object kinds found in ``room``, in catalogue order."""
    return tuple(k.name for k in OBJECT_KINDS.values() if room in k.rooms and k.pickupable)
