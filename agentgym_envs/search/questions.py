"""Multi-hop questions made by walks on the world graph, kept only when every hop is needed.

Two shapes, as in HotpotQA and 2WikiMultiHopQA:

* **bridge** (1–4 hops): follow ``h - 1`` relations from an anchor entity named in the question, then ask
  for one more relation or the year of the last entity. "In which city was the founder of the publisher
  of The Kruse born?" is 3 hops: publisher, founder, birthplace.
* **comparison** (2–4 hops): two independent branches of ``h - 1`` relations end at entities of one kind;
  the answer is whichever has the earlier (or later) year. "Who was born earlier: the founder of X or
  the creator of Y?" The answer is a name reached by the walk, never one written in the question.

Relations are functional and names unique, so the answer is unique. A candidate is rejected unless
(``no_shortcut``): no passage mentions two chain entities that are two or more hops apart (so the anchor
and the answer never share a passage and no passage skips a hop), a year answer appears in no passage that
mentions an entity two or more hops before it, and the two branches of a comparison share no passage.

>>> from .corpus import render_world
>>> from .generate import generate_world
>>> rendered = render_world(generate_world(0, "tiny"))
>>> qs = generate_questions(rendered, hops=3, count=20)
>>> all(q.hops == 3 and len(q.plan) >= 3 for q in qs)
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .corpus import YEAR, RenderedWorld
from .world import ATTRIBUTES, RELATIONS, RELATIONS_FROM, Entity, World

BRIDGE, COMPARISON = "bridge", "comparison"
SPLITS = ("train", "validation", "test")
#: Share of comparison questions at 2 hops and more.
COMPARISON_RATE = 0.3
MAX_HOPS = 4


@dataclass(frozen=True)
class Hop:
    """One fact the question needs: about ``entity``, stated in passage ``passage``; ``query`` is a good search."""

    entity: int
    fact: str  # a relation name, or YEAR
    passage: int
    query: str


@dataclass(frozen=True)
class Question:
    """A generated question with its aliases-included answers and the hops that reach them, in order."""

    id: str
    text: str
    answers: tuple[str, ...]
    hops: int
    shape: str
    plan: tuple[Hop, ...]
    anchors: tuple[int, ...]

    @property
    def gold_passages(self) -> frozenset[int]:
        return frozenset(h.passage for h in self.plan)


def generate_questions(rendered: RenderedWorld, hops: int, count: int) -> list[Question]:
    """Up to ``count`` distinct questions of ``hops`` hops (deterministic in the world's seed).

    A ``COMPARISON_RATE`` share are comparisons (from 2 hops); the two shapes are interleaved at random.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be in 1..{MAX_HOPS}, got {hops}")
    rng = random.Random(f"{rendered.world.seed}/questions/{hops}")
    comparisons = round(count * COMPARISON_RATE) if hops >= 2 else 0
    made = _sample(rendered, hops, comparisons, _comparison, rng)
    made += _sample(rendered, hops, count - comparisons, _bridge, rng)
    rng.shuffle(made)
    prefix = f"w{rendered.world.seed}-h{hops}"
    return [Question(f"{prefix}-{i}", text, answers, hops, shape, plan, anchors)
            for i, (text, answers, shape, plan, anchors) in enumerate(made)]


def _sample(rendered: RenderedWorld, hops: int, count: int, make, rng: random.Random) -> list[tuple]:
    """Up to ``count`` distinct candidates from ``make`` that pass its checks (bounded attempts)."""
    found: dict[tuple, tuple] = {}
    for _ in range(count * 40):
        if len(found) >= count:
            break
        candidate = make(rendered, hops, rng)
        if candidate is not None and candidate[0] not in found:
            found[candidate[0]] = candidate[1]
    return list(found.values())


def split_of(index: int, total: int) -> str:
    """Fixed splits by position in the generated order: the first tenth is test, the next validation."""
    tenth = max(1, total // 10)
    return "test" if index < tenth else "validation" if index < 2 * tenth else "train"


# ----------------------------------------------------------------------------- shapes
def _walk(world: World, anchor: Entity, depth: int, rng: random.Random) -> list[tuple[Entity, str]] | None:
    """``depth`` random relation steps from ``anchor`` through distinct entities: ``[(subject, relation)]``."""
    steps: list[tuple[Entity, str]] = []
    current, visited = anchor, {anchor.id}
    for _ in range(depth):
        options = [r.name for r in RELATIONS_FROM[current.kind] if r.name in current.relations]
        if not options:
            return None
        relation = rng.choice(options)
        nxt = world.entities[current.relations[relation]]
        if nxt.id in visited:
            return None
        steps.append((current, relation))
        visited.add(nxt.id)
        current = nxt
    return steps


def _bridge(rendered: RenderedWorld, hops: int, rng: random.Random):
    world = rendered.world
    anchor = rng.choice(world.entities)
    steps = _walk(world, anchor, hops - 1, rng)
    if steps is None:
        return None
    last = world.entities[steps[-1][0].relations[steps[-1][1]]] if steps else anchor
    finals = [r.name for r in RELATIONS_FROM[last.kind] if r.name in last.relations] + [YEAR]
    final = rng.choice(finals)
    steps.append((last, final))
    chain = [s for s, _ in steps]
    phrase = _phrase(anchor.name, steps[:-1])
    if final == YEAR:
        answers, text = (str(last.year),), ATTRIBUTES[last.kind].question.format(phrase)
    else:
        target = world.entities[last.relations[final]]
        if target.id in {e.id for e in chain}:
            return None
        chain.append(target)
        answers, text = target.aliases, RELATIONS[final].question.format(phrase)
    if not _chain_ok(rendered, chain, answers[0] if final == YEAR else None):
        return None
    key = (BRIDGE, anchor.id, tuple(r for _, r in steps))
    return key, (text, answers, BRIDGE, _plan(rendered, steps), (anchor.id,))


def _comparison(rendered: RenderedWorld, hops: int, rng: random.Random):
    world = rendered.world
    branches = []
    for _ in range(2):
        anchor = rng.choice(world.entities)
        steps = _walk(world, anchor, hops - 1, rng)
        if steps is None:
            return None
        end = world.entities[steps[-1][0].relations[steps[-1][1]]]
        branches.append((anchor, steps, end))
    (a, steps_a, x), (b, steps_b, y) = branches
    if x.kind != y.kind or x.year == y.year or a.id == b.id:
        return None
    chain_a, chain_b = [s for s, _ in steps_a] + [x], [s for s, _ in steps_b] + [y]
    if not (_chain_ok(rendered, chain_a, None) and _chain_ok(rendered, chain_b, None)):
        return None
    if not _independent(rendered, chain_a, chain_b):
        return None
    earlier = rng.random() < 0.5
    winner = min((x, y), key=lambda e: e.year) if earlier else max((x, y), key=lambda e: e.year)
    template = ATTRIBUTES[x.kind].earlier if earlier else ATTRIBUTES[x.kind].later
    text = template.format(_phrase(a.name, steps_a), _phrase(b.name, steps_b))
    plan = _plan(rendered, [*steps_a, (x, YEAR)]) + _plan(rendered, [*steps_b, (y, YEAR)])
    key = (COMPARISON, a.id, b.id, tuple(r for _, r in steps_a), tuple(r for _, r in steps_b))
    return key, (text, winner.aliases, COMPARISON, plan, (a.id, b.id))


def _phrase(anchor_name: str, steps: list[tuple[Entity, str]]) -> str:
    """The nested noun phrase for the relation steps: "the founder of the publisher of X"."""
    phrase = anchor_name
    for _, relation in steps:
        phrase = RELATIONS[relation].phrase.format(phrase)
    return phrase


def _plan(rendered: RenderedWorld, steps: list[tuple[Entity, str]]) -> tuple[Hop, ...]:
    hops = []
    for entity, fact in steps:
        keywords = ATTRIBUTES[entity.kind].keywords if fact == YEAR else RELATIONS[fact].keywords
        hops.append(Hop(entity.id, fact, rendered.fact_passage[entity.id, fact], f"{entity.name} {keywords}"))
    return tuple(hops)


# ----------------------------------------------------------------------------- checks
def _chain_ok(rendered: RenderedWorld, chain: list[Entity], year_answer: str | None) -> bool:
    """No passage names two chain entities two or more hops apart; a year answer is not readable early."""
    mentions = rendered.mentions
    for i in range(len(chain)):
        for j in range(i + 2, len(chain)):
            if mentions[chain[i].id] & mentions[chain[j].id]:
                return False
    if year_answer is not None:
        texts = rendered.corpus.texts
        for entity in chain[:-1]:
            if any(_has_word(texts[p], year_answer) for p in mentions[entity.id]):
                return False
    return True


def _independent(rendered: RenderedWorld, chain_a: list[Entity], chain_b: list[Entity]) -> bool:
    """The two branches of a comparison share no entity and no passage."""
    mentions = rendered.mentions
    return all(not (mentions[u.id] & mentions[v.id]) for u in chain_a for v in chain_b)


def _has_word(text: str, word: str) -> bool:
    """``word`` occurs in ``text`` not glued to other letters or digits (years are plain digit runs)."""
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        start = text.find(word, start + 1)
    return False
