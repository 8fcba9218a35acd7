"""WebShop's reward: the fuzzy matcher against rapidfuzz, the formula, the type gate, and goals/splits."""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.web.catalogue import TYPES, load_catalogue
from agentgym_envs.web.fuzzy import normalize_color, token_set_ratio
from agentgym_envs.web.reward import purchase_reward, title_nouns, type_reward
from agentgym_envs.web.tasks import NO_PRICE_BOUND, SPLIT_SIZES, Goal, load_goals
from agentgym_envs.web.vocab import CATEGORIES, OPTION_VALUES

PHRASES = sorted({a for c in CATEGORIES for a in c.attributes} | {a for _, t in TYPES for a in t.attributes}
                 | {v for vs in OPTION_VALUES.values() for v in vs})


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


@pytest.fixture(scope="module")
def goals(catalogue):
    return load_goals(catalogue)


@given(st.sampled_from(PHRASES), st.sampled_from(PHRASES))
def test_token_set_ratio_equals_rapidfuzz_on_the_vocabulary(a: str, b: str) -> None:
    rapidfuzz = pytest.importorskip("rapidfuzz")
    expected = int(round(rapidfuzz.fuzz.token_set_ratio(a, b, processor=rapidfuzz.utils.default_process)))
    assert token_set_ratio(a, b) == expected


def test_fuzzy_and_color_examples() -> None:
    assert token_set_ratio("free of sulfate", "sulfate free") == 100
    assert token_set_ratio("easy clean", "easy to clean") == 100  # one side's tokens are all shared
    assert token_set_ratio("long lasting", "long battery life") <= 85
    assert normalize_color("navy blue") == normalize_color("light blue") == "blue"  # WebShop's quirk, kept
    assert normalize_color("walnut") == "walnut"


def _goal(catalogue, index: int, **changes) -> Goal:
    product = catalogue.products[index]
    fields = dict(product=index, asin=product.asin, query=product.query, category=product.category.name,
                  product_category=product.product_category, name=product.title, attributes=product.attributes[:2],
                  options=tuple((n, v[0]) for n, v in product.options), price_upper=NO_PRICE_BOUND, instruction="x")
    fields.update(changes)
    return Goal(**fields)


def test_target_with_goal_options_scores_one_and_parts_add_up(catalogue) -> None:
    index = next(i for i, p in enumerate(catalogue.products) if len(p.options) == 2)
    product, goal = catalogue.products[index], _goal(catalogue, index)
    assert purchase_reward(catalogue, goal, product, dict(goal.options)).total == 1.0
    no_options = purchase_reward(catalogue, goal, product, {})
    assert no_options.total == pytest.approx((2 + 0 + 1) / (2 + 2 + 1))
    one_option = purchase_reward(catalogue, goal, product, dict(goal.options[:1]))
    assert one_option.option_matches == 1 and one_option.total == pytest.approx(4 / 5)
    too_expensive = purchase_reward(catalogue, _goal(catalogue, index, price_upper=1.0), product, dict(goal.options))
    assert not too_expensive.price_ok and too_expensive.total == pytest.approx(4 / 5)


def test_type_gate_zeroes_a_product_of_another_kind(catalogue) -> None:
    index = next(i for i, p in enumerate(catalogue.products) if p.query == "shampoo")
    other = next(p for p in catalogue.products if p.category.name == "electronics")
    goal = _goal(catalogue, index)
    r_type, query_match, category_match, title_score = type_reward(other, goal)
    assert (query_match, category_match) == (False, False)
    assert title_score == 0.0 and r_type == 0.0
    assert purchase_reward(catalogue, goal, other, {}).total == 0.0


def test_same_type_other_brand_keeps_the_type_reward(catalogue) -> None:
    index = next(i for i, p in enumerate(catalogue.products) if p.query == "coffee beans")
    goal = _goal(catalogue, index)
    rival = next(p for p in catalogue.products if p.query == "coffee beans" and p.brand != goal.name.split()[0])
    assert type_reward(rival, goal)[0] == 1.0
    assert {"coffee", "beans"} <= set(title_nouns(rival.title))


def test_splits_are_webshops_fixed_sizes_and_disjoint(goals) -> None:
    test, eval_, train = goals.split("test"), goals.split("eval"), goals.split("train")
    assert (len(test), len(eval_)) == (SPLIT_SIZES["test"], SPLIT_SIZES["eval"])
    assert len(set(test) | set(eval_) | set(train)) == len(goals.goals) == len(test) + len(eval_) + len(train)
    with pytest.raises(ValueError, match="split must be one of"):
        goals.split("dev")


def test_test_split_is_pinned(goals) -> None:
    """Changing the catalogue or goal generator changes every benchmark number: bump VOCAB_VERSION then."""
    text = "\n".join(goals.goals[i].instruction for i in goals.split("test")[:50])
    assert hashlib.sha256(text.encode()).hexdigest()[:16] == PINNED_TEST_DIGEST


PINNED_TEST_DIGEST = "e3bc308aaaf1a6e8"


def test_goal_weights_are_webshops_inverse_attribute_frequency(goals) -> None:
    counts = Counter(a for g in goals.goals for a in g.attributes)
    for goal in goals.goals[:200]:
        assert goal.weight == pytest.approx(sum(1 / counts[a] for a in goal.attributes) / len(goal.attributes))
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    draws = [goals.weighted_index("train", rng_a) for _ in range(2_000)]
    assert draws == [goals.weighted_index("train", rng_b) for _ in range(2_000)]
    ids = goals.split("train")
    drawn_weight = np.mean([goals.goals[ids[i]].weight for i in draws])
    assert drawn_weight > np.mean([g.weight for g in goals.goals])  # rare-attribute goals come up more often


def test_instructions_follow_webshops_synthetic_style(goals, catalogue) -> None:
    for i in goals.split("test")[:100]:
        goal = goals.goals[i]
        text = goal.instruction
        assert text == text.lower() and goal.query in text
        for name, value in goal.options:
            assert f"{name}: {value}" in text
        if goal.price_upper < NO_PRICE_BOUND:
            assert text.endswith(f", and price lower than {goal.price_upper:.2f} dollars")
            price = catalogue.products[goal.product].price
            assert price < goal.price_upper <= price + 40
        assert set(goal.attributes) <= set(catalogue.products[goal.product].attributes)
