"""Shopping goals in WebShop's style, their inverse-frequency weights, and the fixed splits.

A goal names a target product, a subset of its attributes, one value per option, and a price bound;
its instruction reads like WebShop's synthetic ones ("i need a sulfate free shampoo for dry hair with
scent: lavender, and size: 8 fl oz (pack of 1), and price lower than 40.00 dollars"). The price bound
follows WebShop: the target's price rounded up among multiples of $10, two of the next four drawn, the
larger kept. Each product yields :data:`GOALS_PER_PRODUCT` goals (different attribute subsets and option
combinations), and each goal's weight is WebShop's ``mean(1 / count(attribute))`` over its attributes:
goals about rare attributes are drawn more often by a plain ``reset(seed=...)``.

Splits are WebShop's: the goals are shuffled once with a fixed seed, then ``test`` is the first 500,
``eval`` the next 1,000 and ``train`` the rest.

>>> from .catalogue import load_catalogue
>>> goals = load_goals(load_catalogue(1_000))
>>> len(goals.split("test")), len(goals.split("eval"))
(500, 1000)
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..household.rng import SplitMix64
from ..seeding import text_seed
from .catalogue import Catalogue, Product
from .vocab import VOCAB_VERSION

GOALS_PER_PRODUCT = 2
SPLIT_SIZES = {"test": 500, "eval": 1_000}
SPLITS = ("train", "eval", "test")
PRICE_RANGE = tuple(10.0 * i for i in range(1, 100))
NO_PRICE_BOUND = 1_000_000.0
OPENERS = ("i need", "i am looking for", "i want", "i'm looking for", "find me", "i would like", "get me",
           "i want to buy")


@dataclass(frozen=True, slots=True)
class Goal:
    """WebShop's goal dict as a value: what the reward compares a purchase with."""

    product: int
    """Catalogue index of the target product."""
    asin: str
    query: str
    category: str
    product_category: str
    name: str
    """The target's title (WebShop compares titles' nouns for the type reward)."""
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    """``(option name, value)`` the instruction asks for."""
    price_upper: float
    instruction: str
    weight: float = 1.0


class GoalSet:
    """All goals of a catalogue and WebShop's three splits over them."""

    def __init__(self, catalogue: Catalogue):
        self.catalogue = catalogue
        drafts = [_draft(catalogue, p, j) for p in catalogue.products for j in range(GOALS_PER_PRODUCT)]
        counts = Counter(a for g in drafts for a in g.attributes)
        self.goals: list[Goal] = [_weighted(g, counts) for g in drafts]
        order = list(range(len(self.goals)))
        SplitMix64(text_seed("webshop-splits", VOCAB_VERSION, catalogue.seed)).shuffle(order)
        test, eval_ = SPLIT_SIZES["test"], SPLIT_SIZES["eval"]
        self._splits = {"test": order[:test], "eval": order[test:test + eval_], "train": order[test + eval_:]}

    def split(self, name: str) -> list[int]:
        """Goal ids of a split, in split order (task ``i`` of the split is goal ``split(name)[i]``)."""
        if name not in self._splits:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {name!r}")
        return self._splits[name]

    @cached_property
    def _cumulative(self) -> dict[str, np.ndarray]:
        return {name: np.cumsum([self.goals[i].weight for i in ids]) for name, ids in self._splits.items()}

    def weighted_index(self, split: str, rng: np.random.Generator) -> int:
        """A task index of ``split`` drawn with probability proportional to its goal's weight (WebShop's)."""
        cumulative = self._cumulative[split]
        return int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))


def _draft(catalogue: Catalogue, product: Product, j: int) -> Goal:
    rng = SplitMix64(text_seed("webshop-goal", VOCAB_VERSION, catalogue.seed, product.index, j))
    attributes = list(product.attributes)
    rng.shuffle(attributes)
    attributes = sorted(attributes[: 1 + rng.below(min(3, len(attributes)))], key=product.attributes.index)
    options = tuple((name, rng.choice(values)) for name, values in product.options)
    price_upper = _price_upper(product.price, rng)
    return Goal(product.index, product.asin, product.query, product.category.name, product.product_category,
                product.title, tuple(attributes), options, price_upper,
                instruction_text(product, attributes, options, price_upper, rng))


def _price_upper(price: float, rng: SplitMix64) -> float:
    """WebShop's bound: two of the four next multiples of $10 above the price, the larger one."""
    first_above = int(price // 10) + 1  # PRICE_RANGE[k - 1] == 10 * k is the first multiple above the price
    above = list(PRICE_RANGE[first_above - 1:first_above + 3])
    if len(above) < 2:
        return NO_PRICE_BOUND
    first = rng.below(len(above))
    second = (first + 1 + rng.below(len(above) - 1)) % len(above)
    return max(above[first], above[second])


def instruction_text(product: Product, attributes: list[str], options: tuple[tuple[str, str], ...],
                     price_upper: float, rng: SplitMix64) -> str:
    """The instruction in WebShop's synthetic style: need, attributes, ``with name: value, and …``, price."""
    noun = product.query
    plural = noun.endswith("s") and not noun.endswith("ss")
    be = "are" if plural else "is"
    if rng.below(2) == 0:
        lead, rest = f"{attributes[0]} {noun}", attributes[1:]
    else:
        lead, rest = noun, attributes
    article = "" if plural else ("an " if lead[0] in "aeio" else "a ")
    text = f"{rng.choice(OPENERS)} {article}{lead}"
    if rest:
        text += f" that {be} " + (rest[0] if len(rest) == 1 else ", ".join(rest[:-1]) + " and " + rest[-1])
    if options:
        text += " with " + ", and ".join(f"{name}: {value}" for name, value in options)
    if price_upper < NO_PRICE_BOUND:
        text += f", and price lower than {price_upper:.2f} dollars"
    return text


def _weighted(goal: Goal, counts: Counter) -> Goal:
    weight = sum(1.0 / counts[a] for a in goal.attributes) / len(goal.attributes)
    return Goal(goal.product, goal.asin, goal.query, goal.category, goal.product_category, goal.name,
                goal.attributes, goal.options, goal.price_upper, goal.instruction, weight)


_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _cached(catalogue: Catalogue) -> GoalSet:
    return GoalSet(catalogue)


def load_goals(catalogue: Catalogue) -> GoalSet:
    """The shared goal set of ``catalogue`` (built once per process)."""
    with _LOCK:
        return _cached(catalogue)
