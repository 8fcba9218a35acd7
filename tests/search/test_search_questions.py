"""The world, corpus and questions: determinism, scale, unique answers and the no-shortcut property.

The no-shortcut test does not trust the generator's own bookkeeping (its mention sets): it rescans the
rendered passage text for every alias of every entity a question touches.
"""

from __future__ import annotations

import doctest
import importlib
import re
import time
from collections import defaultdict
from functools import lru_cache

import pytest

from agentgym_envs.search.corpus import YEAR, render_world
from agentgym_envs.search.dataset import load_dataset
from agentgym_envs.search.generate import generate_world
from agentgym_envs.search.questions import BRIDGE, COMPARISON, generate_questions, split_of
from agentgym_envs.search.scoring import exact_match, f1_score, normalize_answer
from agentgym_envs.search.world import RELATIONS

MODULES = ["names", "generate", "corpus", "questions", "scoring", "retrieval", "data", "dataset", "grammar"]
_WORD = re.compile(r"\w+")


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(f"agentgym_envs.search.{name}")
    assert doctest.testmod(module).failed == 0


@lru_cache(maxsize=1)
def rendered_small():
    return render_world(generate_world(0, "small"))


class TextIndex:
    """Which passages (title + text) contain a phrase, found by scanning the text itself."""

    def __init__(self, corpus):
        self.texts = [f"{t} {x}".lower() for t, x in zip(corpus.titles, corpus.texts)]
        self.by_word: dict[str, set[int]] = defaultdict(set)
        for i, text in enumerate(self.texts):
            for word in _WORD.findall(text):
                self.by_word[word].add(i)

    def containing(self, phrase: str) -> set[int]:
        words = _WORD.findall(phrase.lower())
        candidates = set.intersection(*(self.by_word.get(w, set()) for w in words))
        pattern = re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, words)) + r"(?!\w)")
        return {i for i in candidates if pattern.search(self.texts[i])}

    def mentions(self, entity) -> set[int]:
        return set().union(*(self.containing(alias) for alias in entity.aliases))


def test_same_seed_same_world_and_different_seed_different_world() -> None:
    a, b, c = (render_world(generate_world(s, "tiny")).corpus for s in (3, 3, 4))
    assert a.texts == b.texts and a.titles == b.titles
    assert a.texts != c.texts


def test_names_are_unique_and_twins_look_alike() -> None:
    world = generate_world(0, "small")
    names = [e.name for e in world.entities]
    assert len(set(names)) == len(names)
    people = {e.name.split()[1]: e for e in world.of_kind("person")}
    near = sum(1 for family in people if family + "e" in people or family + "n" in people)
    assert near > 10, "expected look-alike distractor names"


def test_large_world_has_100k_passages_and_builds_fast() -> None:
    start = time.perf_counter()
    rendered = render_world(generate_world(0, "large"))
    elapsed = time.perf_counter() - start
    assert len(rendered.corpus) >= 100_000
    assert elapsed < 30, f"generating and rendering took {elapsed:.1f}s"


def test_every_fact_is_stated_in_its_passage() -> None:
    rendered = rendered_small()
    world, texts = rendered.world, rendered.corpus.texts
    for (entity_id, fact), passage in list(rendered.fact_passage.items())[:2000]:
        entity = world.entities[entity_id]
        assert rendered.corpus.titles[passage] == entity.name
        expected = str(entity.year) if fact == YEAR else world.entities[entity.relations[fact]].name
        assert expected in texts[passage]


def _chains(question, world) -> list[list]:
    """The entity chains of a question (one per branch), the answer entity last where it is one."""
    steps = [world.entities[h.entity] for h in question.plan]
    if question.shape == BRIDGE:
        last = question.plan[-1]
        chain = list(steps)
        if last.fact != YEAR:
            chain.append(world.entities[steps[-1].relations[last.fact]])
        return [chain]
    half = len(steps) // 2
    return [steps[:half], steps[half:]]


def _all_questions():
    rendered = rendered_small()
    return rendered, [q for hops in (1, 2, 3, 4) for q in generate_questions(rendered, hops, 300)]


def test_no_single_passage_shortcuts_a_chain() -> None:
    """Over 1,200 questions: no passage names two chain entities two or more hops apart (text scan)."""
    rendered, questions = _all_questions()
    index, world = TextIndex(rendered.corpus), rendered.world
    checked = 0
    for question in questions:
        chains = _chains(question, world)
        mentioned = [[index.mentions(e) for e in chain] for chain in chains]
        for chain, sets in zip(chains, mentioned):
            for i in range(len(chain)):
                for j in range(i + 2, len(chain)):
                    assert not sets[i] & sets[j], (question.text, chain[i].name, chain[j].name)
                    checked += 1
        if question.shape == BRIDGE and question.hops >= 2:
            anchor_passages = index.mentions(world.entities[question.anchors[0]])
            answer_passages = set().union(*(index.containing(a) for a in question.answers))
            assert not anchor_passages & answer_passages, question.text
        if question.shape == COMPARISON:
            assert not set().union(*mentioned[0]) & set().union(*mentioned[1]), question.text
    assert checked > 1000


def test_year_answers_are_not_readable_before_the_last_hop() -> None:
    rendered, questions = _all_questions()
    index, world = TextIndex(rendered.corpus), rendered.world
    year_questions = [q for q in questions if q.shape == BRIDGE and q.plan[-1].fact == YEAR and q.hops >= 2]
    assert len(year_questions) > 100
    for question in year_questions:
        year_passages = index.containing(question.answers[0])
        for hop in question.plan[:-1]:
            assert not index.mentions(world.entities[hop.entity]) & year_passages, question.text


def test_answers_are_unique_and_never_in_the_question() -> None:
    """Resolving each question from the names it contains, through the graph, gives exactly its answer."""
    rendered, questions = _all_questions()
    world = rendered.world
    by_name = {e.name: e for e in world.entities}
    for question in questions:
        for anchor_id in question.anchors:
            assert by_name[world.entities[anchor_id].name].id == anchor_id
            assert world.entities[anchor_id].name in question.text
        assert all(normalize_answer(a) not in normalize_answer(question.text).split(" ") for a in question.answers)
        ends = [_resolve(world, chain[0], question, branch) for branch, chain in enumerate(_chains(question, world))]
        if question.shape == BRIDGE:
            assert ends[0] == question.answers[0]
        else:
            x, y = ends
            assert x.year != y.year
            winner = min(x, y, key=lambda e: e.year) if "earlier" in question.text else max(x, y, key=lambda e: e.year)
            assert winner.name == question.answers[0]


def _resolve(world, anchor, question, branch):
    """Follow the plan's relations from ``anchor``; return the final entity, or the answer text of a bridge."""
    half = len(question.plan) // 2
    plan = question.plan if question.shape == BRIDGE else question.plan[branch * half:(branch + 1) * half]
    entity = anchor
    for hop in plan:
        assert hop.entity == entity.id
        if hop.fact == YEAR:
            return str(entity.year) if question.shape == BRIDGE else entity
        entity = world.entities[entity.relations[hop.fact]]
    return entity.name


def test_every_hop_is_needed_and_levels_differ() -> None:
    rendered, questions = _all_questions()
    for question in questions:
        gold = question.gold_passages
        expected = question.hops if question.shape == BRIDGE else 2 * question.hops
        assert len(question.plan) == expected and len(gold) == expected, question.text
    shapes = {(q.hops, q.shape) for q in questions}
    assert (1, COMPARISON) not in shapes and {(h, s) for h in (2, 3, 4) for s in (BRIDGE, COMPARISON)} <= shapes
    assert all(r.phrase.count("{}") == 1 for r in RELATIONS.values())


def test_splits_are_fixed_and_disjoint() -> None:
    data = load_dataset(world_seed=0, world_size="small")
    ids = {split: {q.id for q in data.qa(split)} for split in ("train", "validation", "test")}
    assert not ids["train"] & ids["test"] and not ids["validation"] & ids["test"]
    assert [len(data.qa("test", h)) for h in (1, 2, 3, 4)] == [100] * 4
    assert [split_of(i, 1000) for i in (0, 99, 100, 199, 200)] == ["test", "test", "validation", "validation", "train"]
    again = generate_questions(rendered_small(), 3, 1000)
    assert [q.text for q in again[:100]] == [q.question for q in data.qa("test", 3)]


def test_scoring_normalisation_and_f1() -> None:
    assert exact_match("the Keshal Guild.", ["Keshal Guild"]) == 1.0
    assert exact_match("Keshal", ["Keshal Guild"]) == 0.0
    assert f1_score("Keshal", ["Keshal Guild"]) == pytest.approx(2 / 3)
    assert f1_score("", ["x"]) == 0.0
    assert exact_match("K. Dunmor", ["Kessa Dunmor", "K. Dunmor"]) == 1.0
