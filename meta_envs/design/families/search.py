"""Search configs: a bridge question as an anchor entity, a relation chain, and the fact asked at its end.

``{"anchor": "The Kruse", "relations": ["publisher", "founder"], "final": "birthplace"}`` asks "In which
city was the founder of the publisher of The Kruse born?" (3 hops); ``"final": "year"`` asks for the
last entity's year. The question is built in the registered search world (``agentgym/Search-v0``'s:
seed 0, ``small``) with the family's own templates, and must pass the family's no-shortcut rule (no
passage names two chain entities two hops apart; a year answer is not readable early). The instance is
the question's shape and its ordered gold passages. Held out: every ``validation`` and ``test`` question.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from agentgym_envs.core import Task
from agentgym_envs.search.corpus import YEAR
from agentgym_envs.search.data import QA
from agentgym_envs.search.dataset import SearchData, load_dataset
from agentgym_envs.search.env import SearchEnv
from agentgym_envs.search.questions import BRIDGE, MAX_HOPS, _chain_ok, _phrase, _plan
from agentgym_envs.search.world import ATTRIBUTES, RELATIONS, Entity

from .base import ConfigError, Family, pick

WORLD = {"world_seed": 0, "world_size": "small"}
HELD_OUT_SPLITS = ("validation", "test")
SCHEMA: dict = {
    "type": "object",
    "properties": {"anchor": {"type": "string", "minLength": 1, "maxLength": 120},
                   "relations": {"type": "array", "items": {"type": "string", "enum": sorted(RELATIONS)},
                                 "maxItems": MAX_HOPS - 1},
                   "final": {"type": "string", "enum": [*sorted(RELATIONS), YEAR]}},
    "required": ["anchor", "relations", "final"],
    "additionalProperties": False,
}


class DesignedSearch(SearchEnv):
    """The search env asking one configured question on every reset."""

    def __init__(self, qa: QA, render_mode: str | None = None):
        super().__init__(render_mode=render_mode, split="train", **WORLD)
        self.tasks = (Task(f"search/design/{qa.id}", qa.question, {"qa": qa}),)
        self.task = self.tasks[0]


def _data() -> SearchData:
    return load_dataset(**WORLD)


@lru_cache(maxsize=1)
def _by_name() -> dict[str, Entity]:
    return {e.name: e for e in _data().rendered.world.entities}


def _walk(config: dict) -> tuple[list[tuple[Entity, str]], Entity]:
    """The chain's (subject, relation) steps and the entity the last relation reaches."""
    world = _data().rendered.world
    current = _by_name().get(config["anchor"])
    if current is None:
        raise ConfigError(f"expected the name of an entity of the world, got {config['anchor'][:60]!r}")
    steps, visited = [], {current.id}
    for relation in config["relations"]:
        if relation not in current.relations:
            raise ConfigError(f"expected a relation {current.name} has ({', '.join(current.relations) or 'none'}), "
                              f"got {relation!r}")
        steps.append((current, relation))
        current = world.entities[current.relations[relation]]
        if current.id in visited:
            raise ConfigError(f"expected a chain through distinct entities, got {current.name} twice")
        visited.add(current.id)
    return steps, current


def question(config: dict) -> QA:
    """The config's question; :class:`ConfigError` when the chain breaks or has a shortcut."""
    rendered = _data().rendered
    steps, last = _walk(config)
    final, phrase = config["final"], _phrase(config["anchor"], steps)
    chain = [s for s, _ in steps] + [last]
    if final == YEAR:
        answers, text, year = (str(last.year),), ATTRIBUTES[last.kind].question.format(phrase), str(last.year)
    elif final in last.relations:
        target = rendered.world.entities[last.relations[final]]
        answers, text, year = target.aliases, RELATIONS[final].question.format(phrase), None
        if target.id in {e.id for e in chain}:
            raise ConfigError(f"expected an answer outside the chain, got {target.name} again")
        chain.append(target)
    else:
        raise ConfigError(f"expected a final fact {last.name} has ({', '.join([*last.relations, YEAR])}), got {final!r}")
    if not _chain_ok(rendered, chain, year):
        raise ConfigError("expected every hop to be needed, got a passage that names two entities of the chain two or "
                          "more hops apart (or the year answer early): a shortcut")
    plan = _plan(rendered, [*steps, (last, final)])
    ids = rendered.corpus.ids
    qa_plan = tuple((hop.query, ids[hop.passage]) for hop in plan)
    return QA("design", text, tuple(answers), frozenset(p for _, p in qa_plan), qa_plan, len(plan), BRIDGE)


def build(config: dict) -> DesignedSearch:
    return DesignedSearch(question(config))


def _key(qa: QA) -> list[Any]:
    return [qa.shape, [passage for _, passage in qa.plan]]


def instance_key(config: dict) -> list[Any]:
    return _key(question(config))


def held_out() -> list[tuple[str, list[Any]]]:
    data = _data()
    return [(f"search/{split}/{qa.id}", _key(qa)) for split in HELD_OUT_SPLITS for qa in data.qa(split)]


def example(rng: np.random.Generator) -> dict:
    entities, config = _data().rendered.world.entities, {}
    for _ in range(200):
        anchor = pick(rng, entities)
        current, relations = anchor, []
        for _ in range(int(rng.integers(0, MAX_HOPS))):
            if not current.relations:
                break
            relation = pick(rng, sorted(current.relations))
            relations.append(relation)
            current = entities[current.relations[relation]]
        config = {"anchor": anchor.name, "relations": relations, "final": pick(rng, [*sorted(current.relations), YEAR])}
        try:
            question(config)
            return config
        except ConfigError:
            continue
    return config


FAMILY = Family(
    name="search",
    description=("A multi-hop bridge question over the invented encyclopedia of agentgym/Search-v0: anchor (an entity's "
                 "name), relations (0-3 relation names followed from it) and final (the relation or 'year' asked of "
                 "the last entity); hops = len(relations) + 1, more hops are harder. Every hop must be needed. "
                 "Held out: every validation and test question."),
    schema=SCHEMA, max_steps=12, build=build, instance_key=instance_key, held_out=held_out, example=example,
)
