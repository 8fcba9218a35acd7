"""Generate a fictional world from a seed: entities, look-alike distractors, relations and years.

Everything is drawn from one ``random.Random(seed)`` owned by :func:`generate_world` (never the global
RNG). CPython's ``Random`` gives the same stream for the same integer seed on every platform and version
since 3.2, so a seed names the same world everywhere.

Sizes are entity counts; an entity has two or three passages, so ``large`` (42,000 entities) renders
to more than 100,000 passages.

>>> world = generate_world(seed=0, size="tiny")
>>> len(world.entities) >= 100 and all(e.id == i for i, e in enumerate(world.entities))
True
"""

from __future__ import annotations

import random
from bisect import bisect_left

from .names import NameForge
from .world import CITY, EVENT, ORGANISATION, PERSON, REGION, RELATIONS_FROM, WORK, Entity, World

SIZES = {"tiny": 150, "small": 1_200, "medium": 8_000, "large": 42_000}
#: Share of entities per kind (regions are few: many cities share one, as in a real atlas).
MIX = ((PERSON, 0.40), (CITY, 0.12), (REGION, 0.03), (ORGANISATION, 0.15), (WORK, 0.20), (EVENT, 0.10))
#: Fraction of entities that get a look-alike twin (same kind, a name one letter away).
TWIN_RATE = 0.2
MENTOR_RATE = 0.7
ASSOCIATE_RATE = 0.3
YEARS = {PERSON: (1500, 1950), CITY: (600, 1800), REGION: (500, 1600), ORGANISATION: (1650, 1990),
         WORK: (1600, 2000), EVENT: (1600, 2000)}
DESCRIPTORS = {
    PERSON: ("cartographer", "glassblower", "astronomer", "composer", "shipwright", "archivist", "botanist",
             "painter", "merchant", "poet", "engineer", "physician", "weaver", "historian", "sculptor"),
    CITY: ("river port", "market town", "hill town", "harbour city", "mining town", "university town"),
    REGION: ("highland region", "coastal region", "river valley", "forested region", "steppe region"),
    ORGANISATION: ("shipping", "printing", "banking", "brewing", "mapmaking", "textile", "clockmaking"),
    WORK: ("novel", "opera", "painting", "epic poem", "symphony", "play", "atlas", "treatise"),
    EVENT: ("gathering", "contest", "negotiation", "voyage", "celebration"),
}
ORG_SUFFIXES = ("Guild", "Company", "Society", "Press", "Institute", "Trading House", "Academy", "Works", "Bank")
EVENT_TYPES = ("Festival", "Accord", "Expedition", "Fair", "Treaty", "Games", "Exhibition", "Congress")
WORK_PATTERNS = ("The {a} of {b}", "{a}", "Songs of {a}", "The {a}", "{a} and {b}")


def generate_world(seed: int = 0, size: str | int = "small") -> World:
    """A world of ``size`` entities (a preset name or a count ≥ 50) drawn from ``seed``."""
    count = SIZES.get(size, size) if isinstance(size, str) else size
    if not isinstance(count, int) or count < 50:
        raise ValueError(f"size must be one of {', '.join(SIZES)} or an int >= 50, got {size!r}")
    rng = random.Random(seed)
    forge = NameForge(rng)
    entities: list[Entity] = []
    for kind, share in MIX:
        originals = max(3, round(count * share / (1 + TWIN_RATE)))
        for _ in range(originals):
            parts = _fresh_parts(kind, forge, rng)
            entities.append(_entity(len(entities), kind, parts, rng))
            if rng.random() < TWIN_RATE:
                entities.append(_entity(len(entities), kind, _twin_parts(kind, parts, forge), rng))
    world = World(seed, entities)
    _link(world, rng)
    return world


# ----------------------------------------------------------------------------- names
def _fresh_parts(kind: str, forge: NameForge, rng: random.Random) -> tuple[str, ...]:
    """The pieces a name is assembled from (kept so that a twin can change one of them)."""
    if kind == PERSON:
        return forge.given(), forge.word()
    if kind in (CITY, REGION):
        return (forge.word(),)
    if kind == ORGANISATION:
        return forge.word(), rng.choice(ORG_SUFFIXES)
    if kind == EVENT:
        return forge.word(), rng.choice(EVENT_TYPES)
    return rng.choice(WORK_PATTERNS), forge.word(), forge.word()


def _twin_parts(kind: str, parts: tuple[str, ...], forge: NameForge) -> tuple[str, ...]:
    if kind == PERSON:
        return parts[0], forge.near_miss(parts[1])
    if kind == WORK:
        return parts[0], forge.near_miss(parts[1]), parts[2]
    return (forge.near_miss(parts[0]), *parts[1:])


def _names(kind: str, parts: tuple[str, ...]) -> tuple[str, ...]:
    """Canonical name first, then aliases (which passages also use, so answers may be given either way)."""
    if kind == PERSON:
        given, family = parts
        return f"{given} {family}", f"{given[0]}. {family}"
    if kind == CITY:
        return parts[0], f"{parts[0]} City"
    if kind == REGION:
        return (parts[0],)
    if kind in (ORGANISATION, EVENT):
        return (f"{parts[0]} {parts[1]}",)
    pattern, a, b = parts
    return (pattern.format(a=a, b=b),)


def _entity(index: int, kind: str, parts: tuple[str, ...], rng: random.Random) -> Entity:
    names = _names(kind, parts)
    low, high = YEARS[kind]
    pronoun = rng.choice(("her", "his", "their")) if kind == PERSON else "its"
    return Entity(index, kind, names[0], names, rng.randint(low, high), rng.choice(DESCRIPTORS[kind]), pronoun=pronoun)


# ----------------------------------------------------------------------------- relations
def _link(world: World, rng: random.Random) -> None:
    """Draw every entity's relations: each object uniform among entities of the object kind."""
    by_kind = {kind: world.of_kind(kind) for kind, _ in MIX}
    people = sorted(by_kind[PERSON], key=lambda p: (p.year, p.id))
    years = [p.year for p in people]
    for entity in world.entities:
        for relation in RELATIONS_FROM[entity.kind]:
            if relation.name == "mentor":
                mentor = _older(people, years, entity, rng)
                if mentor is not None:
                    entity.relations["mentor"] = mentor.id
                continue
            candidates = by_kind[relation.object]
            target = rng.choice(candidates)
            while target.id == entity.id:
                target = rng.choice(candidates)
            entity.relations[relation.name] = target.id
        if entity.kind == PERSON and rng.random() < ASSOCIATE_RATE:
            other = rng.choice(by_kind[PERSON])
            if other.id != entity.id:
                entity.associates = (other.id,)


def _older(people: list[Entity], years: list[int], person: Entity, rng: random.Random) -> Entity | None:
    """A mentor born at least 15 years before ``person`` (with probability ``MENTOR_RATE``)."""
    limit = bisect_left(years, person.year - 15)
    if limit == 0 or rng.random() >= MENTOR_RATE:
        return None
    return people[rng.randrange(limit)]
