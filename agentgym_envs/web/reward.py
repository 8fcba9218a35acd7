"""WebShop's reward for a purchase, ported from ``web_agent_site/engine/goal.py``.

    r = r_type · (attribute matches + option matches + 1[price ≤ bound]) / (#attributes + #options + 1)

* An attribute of the goal matches when one of the product's attributes has a token-set ratio above 85
  with it, or, failing that, when it appears verbatim in the title, the bullet points or the description.
* An option of the goal matches when one of the chosen option values does, both after WebShop's
  ``normalize_color`` (the first of WebShop's 102 base colours found as a substring: ``dark grey`` ->
  ``dark``, so it does *not* match ``grey``; ``dark wash`` and ``light wash`` both -> ``ash``, so they match
  each other: WebShop's quirks, kept so that scores compare); WebShop's current code iterates the goal's
  options, so an option is counted at most once.
* ``r_type`` gates everything on the product being the right kind of thing: 1 when the WebShop query
  matches, at least two category levels are shared, or ``title_score`` > 0.2; 0.5 otherwise; 0.1 when
  ``title_score`` < 0.1; 0 when it is 0. ``title_score`` is the number of *distinct* nouns the two titles
  share over the number of noun *tokens* in the goal title (duplicates count, as in WebShop, where the
  numerator is a set intersection and the denominator the length of the goal's noun list).

WebShop tags nouns with spaCy's ``en_core_web_sm`` (NOUN and PROPN tags). Titles here are generated from a
known vocabulary, so the nouns are known too (:data:`NOUNS`: type nouns, brand names and a few generic
nouns); no model needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from .catalogue import BRANDS, TYPES, Catalogue, Product
from .fuzzy import fuzzy_match, normalize_color
from .tasks import Goal
from .vocab import GENERIC_NOUNS

NOUNS = frozenset({n for _, t in TYPES for n in t.nouns} | {b.lower() for b in BRANDS} | GENERIC_NOUNS)
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Reward:
    """The reward and its parts (WebShop's ``verbose`` info)."""

    total: float
    r_type: float
    attribute_matches: int
    option_matches: int
    price_ok: bool
    query_match: bool
    category_match: bool
    title_score: float

    def as_info(self) -> dict[str, float]:
        return {"r_type": self.r_type, "attribute_matches": float(self.attribute_matches),
                "option_matches": float(self.option_matches), "r_price": float(self.price_ok),
                "title_score": self.title_score}


def title_nouns(title: str) -> list[str]:
    """The noun tokens of a title in order, repeats kept (what spaCy's NOUN/PROPN tags would pick out of
    our generated titles)."""
    return [w for w in _TOKEN.findall(title.lower()) if w in NOUNS]


def type_reward(product: Product, goal: Goal) -> tuple[float, bool, bool, float]:
    """``(r_type, query_match, category_match, title_score)`` as in WebShop's ``get_type_reward``."""
    query_match = product.query == goal.query
    shared_levels = {x.strip() for x in product.product_category.split("›")} & {
        x.strip() for x in goal.product_category.split("›")}
    category_match = len(shared_levels) >= 2
    desired = title_nouns(goal.name)
    shared = set(title_nouns(product.title)) & set(desired)
    title_score = 0.2 if not desired else len(shared) / len(desired)  # len(desired): repeats count
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, query_match, category_match, title_score


def attribute_matches(catalogue: Catalogue, product: Product, goal: Goal) -> int:
    details = catalogue.details(product)
    texts = (product.title.lower(), " ".join(details.bullets).lower(), details.description.lower())
    count = 0
    for wanted in goal.attributes:
        if any(fuzzy_match(have, wanted) for have in product.attributes) or any(wanted in t for t in texts):
            count += 1
    return count


def option_matches(chosen: Mapping[str, str], goal: Goal) -> int:
    chosen_values = [normalize_color(v) for v in chosen.values()]
    return sum(
        1 for _, wanted in goal.options
        if any(fuzzy_match(have, normalize_color(wanted)) for have in chosen_values)
    )


def purchase_reward(catalogue: Catalogue, goal: Goal, product: Product, chosen: Mapping[str, str]) -> Reward:
    """WebShop's reward for buying ``product`` with options ``chosen`` (name → value) against ``goal``."""
    r_type, query_match, category_match, title_score = type_reward(product, goal)
    attrs = attribute_matches(catalogue, product, goal)
    opts = option_matches(chosen, goal)
    price_ok = product.price <= goal.price_upper
    total = r_type * (attrs + opts + int(price_ok)) / (len(goal.attributes) + len(goal.options) + 1)
    return Reward(total, r_type, attrs, opts, price_ok, query_match, category_match, title_score)
