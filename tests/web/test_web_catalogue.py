"""The generated catalogue: determinism, breadth, near-duplicates, and text that cannot fake attributes."""

from __future__ import annotations

import doctest
import hashlib
from collections import Counter

import pytest

from agentgym_envs.web import actions, fuzzy, search, server, tasks, text_view
from agentgym_envs.web import catalogue as catalogue_module
from agentgym_envs.web.cache import cached
from agentgym_envs.web.catalogue import MIN_PRODUCTS, TYPES, Catalogue, load_catalogue
from agentgym_envs.web.prose import BENEFITS, CLOSERS, EXTRA_BULLETS, MIDDLES, OPENERS
from agentgym_envs.web.vocab import CATEGORIES, OPTION_VALUES

ATTRIBUTES = {a for c in CATEGORIES for a in c.attributes} | {a for _, t in TYPES for a in t.attributes}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue()


@pytest.mark.parametrize("module", [actions, catalogue_module, fuzzy, search, server, tasks, text_view])
def test_doctests(module) -> None:
    assert doctest.testmod(module).failed == 0


def _digest(catalogue: Catalogue, count: int = 500) -> str:
    rows = (f"{p.asin}|{p.title}|{p.price}|{p.attributes}|{p.options}|{p.stars}" for p in catalogue.products[:count])
    text = "\n".join(rows)
    return hashlib.sha256(text.encode()).hexdigest()


def test_default_catalogue_is_large_and_deterministic(catalogue: Catalogue) -> None:
    assert len(catalogue) >= 10_000
    fresh = Catalogue(MIN_PRODUCTS)  # built without any cache, in this process
    assert _digest(fresh) == _digest(catalogue)  # a prefix does not depend on the catalogue's size
    assert _digest(Catalogue(MIN_PRODUCTS, seed=1)) != _digest(fresh)


def test_asins_are_unique_and_look_like_amazon_ids(catalogue: Catalogue) -> None:
    asins = [p.asin for p in catalogue.products]
    assert len(set(asins)) == len(asins)
    assert all(len(a) == 10 and a.startswith("B0") and a.isalnum() and a.isupper() for a in asins)


def test_five_categories_with_trees_and_balanced_draws(catalogue: Catalogue) -> None:
    counts = Counter(p.category.name for p in catalogue.products)
    assert set(counts) == {"beauty", "food", "fashion", "furniture", "electronics"}
    assert min(counts.values()) > 0.15 * len(catalogue)
    assert all(len(p.product_category.split(" › ")) >= 3 for p in catalogue.products[:200])
    assert len({p.type_id for p in catalogue.products}) == len(TYPES)


def test_products_have_attributes_options_prices_and_pages(catalogue: Catalogue) -> None:
    for product in catalogue.products[:300]:
        details = catalogue.details(product)
        assert 3 <= len(product.attributes) <= 5 and set(product.attributes) <= ATTRIBUTES
        assert product.price > 0 and product.price_text.startswith("$")
        vocabulary = {v for vs in OPTION_VALUES.values() for v in vs}
        for _, values in product.options:
            assert values and set(values) <= vocabulary and all("/" not in v and v == v.lower() for v in values)
        assert len(details.bullets) == len(product.attributes) + 1 and details.description
        assert len(details.reviews) == len(product.stars)
    assert sum(1 for p in catalogue.products if not p.options) > 0  # some products have no options


def test_near_duplicates_share_brand_type_and_title_shape(catalogue: Catalogue) -> None:
    titles = Counter((p.brand, p.type_id) for p in catalogue.products)
    shared = sum(n for n in titles.values() if n > 1)
    assert shared > 0.2 * len(catalogue)


def test_filler_prose_names_no_attribute() -> None:
    """WebShop also counts an attribute found in a page's text; fillers must not hand them out."""
    fillers = [*BENEFITS, *EXTRA_BULLETS, *OPENERS, *MIDDLES, *CLOSERS]
    for text in fillers:
        for attribute in ATTRIBUTES:
            assert attribute not in text.lower(), (attribute, text)


def test_too_small_catalogue_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1,000"):
        Catalogue(10)


def test_disk_cache_round_trips_and_rebuilds_damaged_entries(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path))
    calls = []

    def build() -> list[int]:
        calls.append(1)
        return [1, 2, 3]

    save = lambda value, path: (path / "v.txt").write_text(",".join(map(str, value)))  # noqa: E731
    load = lambda path: [int(x) for x in (path / "v.txt").read_text().split(",")]  # noqa: E731
    assert cached("entry", build, save, load) == [1, 2, 3]
    assert cached("entry", build, save, load) == [1, 2, 3] and len(calls) == 1
    (tmp_path / "web" / "entry" / "v.txt").write_text("garbage")
    assert cached("entry", build, save, load) == [1, 2, 3] and len(calls) == 2
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", "off")
    assert cached("entry", build, save, load) == [1, 2, 3] and len(calls) == 3
