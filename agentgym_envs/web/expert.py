"""The scripted expert and WebShop's rule baseline, both acting on the page model (any mode).

The expert knows the goal. It searches the instruction (without the price clause) and, if the target is
not among the 50 hits, the target's title instead; pages to the target, opens it, picks the goal's
option values one click at a time and buys. When the target cannot be found at all it buys the hit that
scores best under the reward with the options it would pick, so it never stalls.

The rule baseline is WebShop's: search the instruction, click the first result, buy it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import numpy as np

from .catalogue import Product
from .reward import purchase_reward
from .shop import (
    BUY_NOW,
    DONE,
    ITEM,
    MAX_QUERY_CHARS,
    NEXT_PAGE,
    PREV_PAGE,
    PRODUCT_WINDOW,
    RESULTS,
    SEARCH,
    Location,
    Shop,
    normalize_query,
)
from .tasks import Goal

_PRICE_CLAUSE = re.compile(r",? and price lower than [\d.]+ dollars$")


def expert_action(shop: Shop, goal: Goal, location: Location) -> str:
    """The expert's next action at ``location``."""
    if location.kind == SEARCH:
        return f"search[{expert_query(shop, goal)}]"
    if location.kind == DONE:
        return "click[back to search]"  # the episode is over; any action is refused
    if location.kind == RESULTS:
        return _on_results(shop, goal, location)
    if location.kind == ITEM and location.asin == _choice(shop, goal, location.query):
        chosen = dict(location.options)
        for name, value in wanted_options(shop.catalogue.get(location.asin), goal):
            if chosen.get(name) != value:
                return f"click[{value}]"
        return f"click[{BUY_NOW.lower()}]"
    return f"click[{PREV_PAGE.lower()}]"  # a sub-page, or another product's page


def expert_query(shop: Shop, goal: Goal) -> str:
    """The instruction without its price clause, or the target's title when that misses the target."""
    natural = normalize_query(_PRICE_CLAUSE.sub("", goal.instruction))[:MAX_QUERY_CHARS]
    return natural if goal.product in shop.results(natural) else normalize_query(goal.name)


def wanted_options(product: Product, goal: Goal) -> list[tuple[str, str]]:
    """The goal's option values this product offers, as ``(name, value)`` in the product's order."""
    wanted = dict(goal.options)
    return [(name, wanted[name]) for name, values in product.options if wanted.get(name) in values]


def _on_results(shop: Shop, goal: Goal, location: Location) -> str:
    choice = _choice(shop, goal, location.query)
    if choice is None:
        return "click[back to search]"
    page = shop.results(location.query).index(shop.catalogue.by_asin[choice]) // PRODUCT_WINDOW + 1
    if page == location.page:
        return f"click[{choice.lower()}]"
    return f"click[{(NEXT_PAGE if page > location.page else PREV_PAGE).lower()}]"


@lru_cache(maxsize=4_096)
def _choice(shop: Shop, goal: Goal, query: str) -> str | None:
    """The ASIN the expert buys among ``query``'s hits: the target if present, else the best-scoring hit."""
    hits = shop.results(query)
    if goal.product in hits:
        return goal.asin
    if not hits:
        return None
    products = [shop.catalogue.products[i] for i in hits]
    scores = [purchase_reward(shop.catalogue, goal, p, dict(wanted_options(p, goal))).total for p in products]
    return products[int(np.argmax(scores))].asin


def rule_action(location: Location, instruction: str, first_hit: str | None) -> str:
    """WebShop's rule baseline: search the instruction, click the first result, buy."""
    if location.kind == SEARCH:
        return f"search[{normalize_query(instruction)[:MAX_QUERY_CHARS]}]"
    if location.kind == RESULTS:
        return f"click[{first_hit.lower()}]" if first_hit else "click[back to search]"
    if location.kind == ITEM:
        return f"click[{BUY_NOW.lower()}]"
    return f"click[{PREV_PAGE.lower()}]"


def rule_agent(env: Any, rng: Any = None) -> str:
    """The rule baseline as an agent with :mod:`agentgym_envs.baselines`' signature ``(env, rng) -> action``."""
    base = env.unwrapped
    hits = base.shop.results(base.location.query) if base.location.kind == RESULTS else ()
    first = base.shop.catalogue.products[hits[0]].asin if hits else None
    return rule_action(base.location, base.instruction, first)
