"""Where our WebShop reward once disagreed with WebShop's ``goal.py`` (princeton-nlp/WebShop, commit 64fa2a5,
``web_agent_site/engine/goal.py`` and ``normalize.py``): its 102 base colours and its title score, which
divides the shared *distinct* nouns by the goal title's noun *tokens* (repeats count)."""

from __future__ import annotations

import dataclasses

import pytest

from agentgym_envs.web.catalogue import load_catalogue
from agentgym_envs.web.fuzzy import normalize_color
from agentgym_envs.web.reward import option_matches, purchase_reward, title_nouns, type_reward
from agentgym_envs.web.tasks import NO_PRICE_BOUND, Goal
from agentgym_envs.web.vocab import COLOR_SET


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


def _goal(product, **changes) -> Goal:
    fields = dict(product=0, asin=product.asin, query=product.query, category=product.category.name,
                  product_category=product.product_category, name=product.title, attributes=(), options=(),
                  price_upper=NO_PRICE_BOUND, instruction="x")
    return Goal(**{**fields, **changes})


def test_colour_list_is_webshops() -> None:
    assert len(COLOR_SET) == 102 and list(COLOR_SET) == sorted(COLOR_SET) and len(set(COLOR_SET)) == 102
    assert {"dark", "light", "ash", "gray", "grey", "multicolor", "stonewash", "walnut"} <= set(COLOR_SET)


@pytest.mark.parametrize("value,normal", [
    ("dark grey", "dark"), ("light grey", "grey"), ("navy blue", "blue"), ("light blue", "blue"),
    ("dark wash", "ash"), ("light wash", "ash"), ("rose gold", "gold"), ("walnut", "walnut"),
    ("unscented", "unscented"), ("x-large", "x-large"),
])
def test_normalize_color_takes_webshops_first_substring(value: str, normal: str) -> None:
    assert normalize_color(value) == normal


def test_dark_grey_does_not_match_grey() -> None:
    goal = dataclasses.replace(_goal(load_catalogue().products[0]), options=(("color", "dark grey"),))
    assert option_matches({"color": "grey"}, goal) == 0  # WebShop: 'dark' vs 'grey'
    assert option_matches({"color": "dark grey"}, goal) == 1
    assert option_matches({"roast": "dark roast"}, goal) == 1  # 'dark' both: WebShop's substring quirk
    assert option_matches({"color": "dark wash"}, goal) == 0  # 'ash' comes before 'dark' in the list


def test_title_score_counts_repeated_goal_nouns(catalogue) -> None:
    assert title_nouns("Coffee Coffee Beans") == ["coffee", "coffee", "beans"]
    product = catalogue.products[0]  # "Peltek Essential Conditioner - ...": its nouns include "conditioner"
    assert "conditioner" in title_nouns(product.title) and "shampoo" not in title_nouns(product.title)
    # A goal of another query and category whose title has two distinct nouns, one shared, one repeated.
    goal = _goal(product, query="shampoo", product_category="A › B › C",
                 name="Conditioner Conditioner Conditioner Conditioner Shampoo")
    r_type, query_match, category_match, title_score = type_reward(product, goal)
    assert (query_match, category_match) == (False, False)
    assert title_score == pytest.approx(1 / 5)  # a set denominator would give 1/2
    assert r_type == 0.5  # 0.2 is not > 0.2: WebShop halves it; the set version gave 1.0
    assert purchase_reward(catalogue, goal, product, {}).total == pytest.approx(0.5)  # price ok: 0.5 * 1/1
    two = _goal(product, query="shampoo", product_category="A › B › C", name="Conditioner Conditioner Shampoo")
    assert type_reward(product, two)[3] == pytest.approx(1 / 3)
