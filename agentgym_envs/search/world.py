"""The fictional world: entities with typed, functional relations and attributes, and its schema.

A world is a plain graph. Each :class:`Entity` has a kind (person, city, region, organisation, work,
event), a unique name with aliases, attributes (years and descriptive words), and *functional* relations:
``founder``, ``born_in`` … map a subject to exactly one object. Functional relations make every question
built from a walk answerable by exactly one entity, which is what the question generator relies on.

The schema tables below are the single home of the relations' wording: the passage sentence that
states a fact, the noun phrase and question that ask about it, and the keywords a good query uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PERSON, CITY, REGION, ORGANISATION, WORK, EVENT = "person", "city", "region", "organisation", "work", "event"
KINDS = (PERSON, CITY, REGION, ORGANISATION, WORK, EVENT)


@dataclass(frozen=True)
class Relation:
    """A functional relation ``subject kind -> object kind`` and its wording.

    ``sentences`` state the fact in a passage (``{s}`` subject, ``{o}`` object); ``phrase`` names the
    object from the subject ("the founder of {}"); ``question`` asks for it; ``keywords`` are the words a
    query for this fact should contain (every sentence contains them); ``section`` is the index of the
    subject's passage that states it.
    """

    name: str
    subject: str
    object: str
    sentences: tuple[str, ...]
    phrase: str
    question: str
    keywords: str
    section: int


@dataclass(frozen=True)
class Attribute:
    """A year-valued attribute: comparable across entities and usable as an answer."""

    name: str
    kind: str
    sentences: tuple[str, ...]
    question: str
    keywords: str
    section: int
    earlier: str  # comparison wording: "Who was born earlier: {a} or {b}?"
    later: str


RELATIONS: dict[str, Relation] = {r.name: r for r in (
    Relation("born_in", PERSON, CITY, ("{s} was born in {o}.", "{s} was born in the city of {o}."),
             "the birthplace of {}", "In which city was {} born?", "born", 1),
    Relation("employer", PERSON, ORGANISATION, ("{s} worked for {o} for most of {p} career.",
             "For many years {s} worked for {o}."), "the employer of {}", "Which organisation did {} work for?",
             "worked", 2),
    Relation("mentor", PERSON, PERSON, ("{s} was trained by the mentor {o}.", "{p_cap} mentor was {o}."),
             "the mentor of {}", "Who was the mentor of {}?", "mentor", 1),
    Relation("region", CITY, REGION, ("{s} lies in the region of {o}.", "{s} is a city in the region of {o}."),
             "the region of {}", "In which region is {}?", "region", 0),
    Relation("founder", ORGANISATION, PERSON, ("{s} was founded by {o}.", "{o} founded {s}."),
             "the founder of {}", "Who founded {}?", "founded", 1),
    Relation("headquarters", ORGANISATION, CITY,
             ("{s} is headquartered in {o}.", "The headquarters of {s} are in {o}."),
             "the headquarters city of {}", "In which city is {} headquartered?", "headquartered headquarters", 0),
    Relation("creator", WORK, PERSON, ("{s} was created by {o}.", "{o} created {s}."),
             "the creator of {}", "Who created {}?", "created", 0),
    Relation("publisher", WORK, ORGANISATION, ("{s} was published by {o}.", "{o} published {s}."),
             "the publisher of {}", "Which organisation published {}?", "published", 1),
    Relation("venue", EVENT, CITY, ("{s} took place in {o}.", "{s} was held in {o}."),
             "the host city of {}", "In which city was {} held?", "held took place", 0),
    Relation("organiser", EVENT, ORGANISATION, ("{s} was organised by {o}.", "{o} organised {s}."),
             "the organiser of {}", "Which organisation organised {}?", "organised", 1),
)}

ATTRIBUTES: dict[str, Attribute] = {a.kind: a for a in (
    Attribute("birth_year", PERSON, ("{s} was born in the year {v}.", "In the year {v}, {s} was born."),
              "In what year was {} born?", "born year", 0,
              "Who was born earlier: {} or {}?", "Who was born later: {} or {}?"),
    Attribute("founding_year", CITY, ("{s} was first settled in the year {v}.",),
              "In what year was {} first settled?", "first settled year", 1,
              "Which city was settled earlier: {} or {}?", "Which city was settled later: {} or {}?"),
    Attribute("established_year", REGION, ("The region of {s} was established in the year {v}.",),
              "In what year was {} established?", "established year", 1,
              "Which region was established earlier: {} or {}?", "Which region was established later: {} or {}?"),
    Attribute("founding_year", ORGANISATION, ("{s} opened its doors in the year {v}.",),
              "In what year did {} open its doors?", "opened doors year", 2,
              "Which organisation opened its doors earlier: {} or {}?",
              "Which organisation opened its doors later: {} or {}?"),
    Attribute("release_year", WORK, ("{s} first appeared in the year {v}.",),
              "In what year did {} first appear?", "first appeared year", 0,
              "Which work appeared earlier: {} or {}?", "Which work appeared later: {} or {}?"),
    Attribute("event_year", EVENT, ("{s} happened in the year {v}.",),
              "In what year did {} happen?", "happened year", 1,
              "Which event happened earlier: {} or {}?", "Which event happened later: {} or {}?"),
)}

#: Relations by subject kind, in a fixed order (walks iterate them deterministically).
RELATIONS_FROM: dict[str, tuple[Relation, ...]] = {
    kind: tuple(r for r in RELATIONS.values() if r.subject == kind) for kind in KINDS
}
#: How many passages an entity of each kind gets (the ``section`` of its facts index into them).
SECTIONS: dict[str, tuple[str, ...]] = {
    PERSON: ("", "Early life", "Career"), CITY: ("", "History"), REGION: ("", "History"),
    ORGANISATION: ("", "History", "Operations"), WORK: ("", "Publication"), EVENT: ("", "Background"),
}


@dataclass
class Entity:
    """One node of the world graph. ``aliases`` include the canonical ``name`` first."""

    id: int
    kind: str
    name: str
    aliases: tuple[str, ...]
    year: int
    descriptor: str  # occupation, industry, genre … (flavour text only, never an answer)
    relations: dict[str, int] = field(default_factory=dict)  # relation name -> object entity id
    associates: tuple[int, ...] = ()  # non-functional mentions ("corresponded with"), noise for retrieval
    pronoun: str = "its"


@dataclass
class World:
    """A generated world: entities indexed by id (``entities[i].id == i``) and by kind."""

    seed: int
    entities: list[Entity]

    def of_kind(self, kind: str) -> list[Entity]:
        return [e for e in self.entities if e.kind == kind]

    def follow(self, entity: Entity, relation: str) -> Entity | None:
        """The object of ``relation`` for ``entity``, or ``None`` when it has none."""
        target = entity.relations.get(relation)
        return None if target is None else self.entities[target]
