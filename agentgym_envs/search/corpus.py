"""Passages: the :class:`Corpus` every retriever indexes, and the rendering of a world into one.

A corpus is parallel lists of ids, titles and texts (wiki-18 style: an entity's passages share its title,
as DPR's 100-word chunks of a Wikipedia article do). Rendering a world gives each entity two or three
passages (its sections) and states each fact in exactly one of them, the subject's. It also records the
bookkeeping the question generator needs: which passage states which fact, and which passages mention
which entity. Those two maps are what make the no-shortcut check exact instead of heuristic.

>>> from .generate import generate_world
>>> rendered = render_world(generate_world(0, "tiny"))
>>> person = next(e for e in rendered.world.entities if e.kind == "person")
>>> i = rendered.fact_passage[person.id, "born_in"]
>>> rendered.corpus.titles[i] == person.name and "born in" in rendered.corpus.texts[i]
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .world import ATTRIBUTES, CITY, EVENT, ORGANISATION, PERSON, REGION, RELATIONS_FROM, SECTIONS, WORK, Entity, World

YEAR = "year"  # the fact key of an entity's year attribute in ``fact_passage``

INTROS = {
    PERSON: ("{s} (also known as {a1}) was {ad}.", "{s}, often written {a1}, was {ad}."),
    CITY: ("{s} (also called {a1}) is {ad}.", "{s}, known to travellers as {a1}, is {ad}."),
    REGION: ("{s} is {ad}.",),
    ORGANISATION: ("{s} is {ad} firm.", "{s} was {ad} concern."),
    WORK: ("{s} is {ad}.",),
    EVENT: ("{s} was {ad}.",),
}
FILLERS = {
    PERSON: ("{p_cap} letters survive in several archives.", "Contemporaries described {p} manner as {adj}.",
             "Little is recorded about {p} family.", "{p_cap} notebooks were {adj} and carefully kept.",
             "Later writers called {p} methods {adj}."),
    CITY: ("Its streets are described as {adj}.", "The old market square is {adj} and busy.",
           "Visitors often remark on its {adj} bridges."),
    REGION: ("The landscape is {adj} and sparsely settled.", "Its roads were long considered {adj}."),
    ORGANISATION: ("Its ledgers are {adj} and well preserved.", "Rivals called its practices {adj}.",
                   "Its early premises were {adj} and cramped."),
    WORK: ("Critics called it {adj}.", "Its opening is often described as {adj}."),
    EVENT: ("Accounts of it are {adj} and contradictory.", "Chroniclers remembered it as {adj}."),
}
ADJECTIVES = ("meticulous", "austere", "restless", "generous", "eccentric", "ambitious", "quiet", "lavish",
              "severe", "cheerful", "obscure", "celebrated", "modest", "turbulent", "ornate", "frugal")
ASSOCIATE = ("{s} corresponded for years with {o}.", "{s} was a close friend of {o}.")


@dataclass
class Corpus:
    """Passages as parallel lists. ``contents(i)`` is the wiki-18 / Search-R1 form ``'"title"\\ntext'``."""

    ids: list[str]
    titles: list[str]
    texts: list[str]
    _by_id: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)

    def contents(self, i: int) -> str:
        return f'"{self.titles[i]}"\n{self.texts[i]}'

    def index_of(self, passage_id: str) -> int | None:
        """Position of the passage with this id (a dict built on first use)."""
        if self._by_id is None:
            self._by_id = {pid: i for i, pid in enumerate(self.ids)}
        return self._by_id.get(passage_id)


@dataclass
class RenderedWorld:
    """A world and its corpus, with the maps from facts to passages and from entities to mentions."""

    world: World
    corpus: Corpus
    fact_passage: dict[tuple[int, str], int]  # (entity id, relation name or YEAR) -> passage index
    mentions: list[set[int]]  # entity id -> indices of passages that name it (its own included)


def render_world(world: World) -> RenderedWorld:
    """Render every entity's sections as passages (deterministic given the world's seed)."""
    rng = random.Random(world.seed * 7919 + 1)
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    fact_passage: dict[tuple[int, str], int] = {}
    mentions: list[set[int]] = [set() for _ in world.entities]
    for entity in world.entities:
        for sentences, named in _sections(world, entity, rng):
            index = len(texts)
            ids.append(f"p{index}")
            titles.append(entity.name)
            texts.append(" ".join(sentences))
            for key in named:
                if isinstance(key, str):
                    fact_passage[entity.id, key] = index
                else:
                    mentions[key].add(index)
            mentions[entity.id].add(index)
    return RenderedWorld(world, Corpus(ids, titles, texts), fact_passage, mentions)


def _sections(world: World, entity: Entity, rng: random.Random):
    """Yield ``(sentences, named)`` per section; ``named`` holds the fact keys stated and the ids mentioned."""
    article = "an" if entity.descriptor[0] in "aeiou" else "a"
    fill = {"s": entity.name, "p": entity.pronoun, "p_cap": entity.pronoun.capitalize(),
            "ad": f"{article} {entity.descriptor}", "a1": entity.aliases[-1], "v": entity.year}
    for section, heading in enumerate(SECTIONS[entity.kind]):
        sentences: list[str] = [rng.choice(INTROS[entity.kind]).format(**fill)] if section == 0 else []
        named: list[int | str] = []
        for relation in RELATIONS_FROM[entity.kind]:
            target = entity.relations.get(relation.name)
            if relation.section == section and target is not None:
                sentences.append(rng.choice(relation.sentences).format(o=world.entities[target].name, **fill))
                named += [relation.name, target]
        attribute = ATTRIBUTES[entity.kind]
        if attribute.section == section:
            sentences.append(rng.choice(attribute.sentences).format(**fill))
            named.append(YEAR)
        if section == len(SECTIONS[entity.kind]) - 1:
            for other in entity.associates:
                sentences.append(rng.choice(ASSOCIATE).format(o=world.entities[other].name, **fill))
                named.append(other)
        sentences += _filler(entity.kind, fill, rng, 3 - len(sentences) // 2)
        if heading:
            sentences.insert(0, f"{heading}.")
        yield sentences, named


def _filler(kind: str, fill: dict, rng: random.Random, count: int) -> list[str]:
    """Flavour sentences: they name no other entity and hold no number, so they cannot leak answers."""
    chosen = rng.sample(FILLERS[kind], min(max(count, 1), len(FILLERS[kind])))
    return [s.format(adj=rng.choice(ADJECTIVES), **fill) for s in chosen]
