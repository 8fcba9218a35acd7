"""WebShop configs: a shopping need — the product type, the attributes and option values wanted, a price bound.

The goal's target is the first product of the catalogue (``agentgym/WebShop-v0``'s: 10,000 products,
seed 0) of that type that has every attribute and option value asked for and costs less than the
bound; none is a :class:`ConfigError` (the family says which attributes that type's products have).
The instruction is written in WebShop's style by the family's own template; the reward is WebShop's.
The instance is the need itself (type, attributes, options, bound), so a held-out goal restated in
another order is still a copy. Held out: every ``eval`` and ``test`` goal.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np

from agentgym_envs.core import Task
from agentgym_envs.household.rng import SplitMix64
from agentgym_envs.seeding import text_seed
from agentgym_envs.web.catalogue import TYPES, Catalogue, Product
from agentgym_envs.web.env import WebShopEnv
from agentgym_envs.web.shop import Shop
from agentgym_envs.web.tasks import Goal, instruction_text, load_goals

from .base import ConfigError, Family, pick

CATALOGUE = {"num_products": 10_000, "seed": 0}
HELD_OUT_SPLITS = ("eval", "test")
QUERIES = sorted({t.query for _, t in TYPES})
SCHEMA: dict = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "enum": QUERIES},
        "attributes": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 60},
                       "minItems": 1, "maxItems": 3, "uniqueItems": True},
        "options": {"type": "object", "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 60},
                    "maxProperties": 4},
        "price_upper": {"type": "number", "minimum": 1, "maximum": 1000},
    },
    "required": ["query", "attributes", "options", "price_upper"],
    "additionalProperties": False,
}


class DesignedWebShop(WebShopEnv):
    """The text-mode shop with one configured goal on every reset."""

    def __init__(self, goal: Goal, render_mode: str | None = None):
        super().__init__(mode="text", split="train", render_mode=render_mode, **CATALOGUE)
        self.tasks = (Task("webshop/design/0", goal.instruction, {"goal": goal}),)
        self.task = self.tasks[0]

    def _reset(self, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return super()._reset({**options, "task_index": 0})


def _catalogue() -> Catalogue:
    return Shop.shared(CATALOGUE["num_products"], CATALOGUE["seed"]).catalogue


@lru_cache(maxsize=None)
def _of_type(query: str) -> tuple[Product, ...]:
    return tuple(p for p in _catalogue().products if p.ptype.query == query)


def _matches(product: Product, config: dict) -> bool:
    options = dict(product.options)
    return (product.price < config["price_upper"] and set(config["attributes"]) <= set(product.attributes)
            and all(value in options.get(name, ()) for name, value in config["options"].items()))


def goal_of(config: dict) -> Goal:
    """The config's goal; :class:`ConfigError` when no product meets the need."""
    candidates = _of_type(config["query"])
    target = next((p for p in candidates if _matches(p, config)), None)
    if target is None:
        common = ", ".join(a for a, _ in Counter(a for p in candidates for a in p.attributes).most_common(8))
        raise ConfigError(f"expected a need some {config['query']} product meets, got none of {len(candidates)} "
                          f"(their commonest attributes: {common}; options must be values a product offers)")
    attributes = [a for a in target.attributes if a in config["attributes"]]
    options = tuple((name, value) for name, value in config["options"].items())
    bound = float(config["price_upper"])
    rng = SplitMix64(text_seed("webshop-design", json.dumps(config, sort_keys=True)))
    instruction = instruction_text(target, attributes, options, bound, rng)
    return Goal(target.index, target.asin, target.query, target.category.name, target.product_category, target.title,
                tuple(attributes), options, bound, instruction)


def build(config: dict) -> DesignedWebShop:
    return DesignedWebShop(goal_of(config))


def _key(query: str, attributes: Any, options: Any, bound: float) -> list[Any]:
    return [query, sorted(attributes), sorted([name, value] for name, value in options), float(bound)]


def instance_key(config: dict) -> list[Any]:
    return _key(config["query"], config["attributes"], config["options"].items(), config["price_upper"])


def held_out() -> list[tuple[str, list[Any]]]:
    goals = load_goals(_catalogue())
    return [(f"webshop/{split}/{i}", _key(g.query, g.attributes, g.options, g.price_upper))
            for split in HELD_OUT_SPLITS for i, g in enumerate(goals.goals[j] for j in goals.split(split))]


def example(rng: np.random.Generator) -> dict:
    product = pick(rng, _catalogue().products)
    attributes = sorted(product.attributes)[: 1 + int(rng.integers(min(2, len(product.attributes))))]
    options = {name: pick(rng, values) for name, values in product.options[:2]}
    return {"query": product.ptype.query, "attributes": attributes, "options": options,
            "price_upper": float(10 * (int(product.price // 10) + 2))}


FAMILY = Family(
    name="webshop",
    description=("A shopping goal in the 10,000-product shop of agentgym/WebShop-v0: query (a product type), 1-3 "
                 "attributes the product must have, options (option name -> value, e.g. size, color) and "
                 "price_upper in dollars. Some product of that type must meet the whole need. Held out: every eval "
                 "and test goal."),
    schema=SCHEMA, max_steps=20, build=build, instance_key=instance_key, held_out=held_out, example=example,
)
