"""The web family's disk cache never unpickles: a planted pickle (whose unpickling writes a marker file) in
the catalogue or search-index entry is never run; the entry is rebuilt, and the products are the real ones."""

from __future__ import annotations

import os
import pickle
import shlex
from pathlib import Path

import numpy as np
import pytest

from agentgym_envs.web import catalogue as catalogue_module
from agentgym_envs.web import search as search_module
from agentgym_envs.web.catalogue import (MIN_PRODUCTS, Catalogue, catalogue_key, load_catalogue, products_from_json,
                                         products_to_json)

KEY = catalogue_key(MIN_PRODUCTS, 0)


class WritesMarker:
    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(self.marker)}",)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTGYM_CACHE_DIR", str(tmp_path / "cache"))
    catalogue_module._cached.cache_clear()
    search_module._cached.cache_clear()
    yield tmp_path / "cache" / "web"
    catalogue_module._cached.cache_clear()
    search_module._cached.cache_clear()


@pytest.fixture(scope="module")
def reference() -> Catalogue:
    return Catalogue(MIN_PRODUCTS, 0)


def test_a_planted_products_pickle_is_never_loaded(cache, tmp_path, reference):
    marker = tmp_path / "pwned"
    entry = cache / f"catalogue-{KEY}"
    entry.mkdir(parents=True)
    (entry / "products.pkl").write_bytes(pickle.dumps([WritesMarker(marker)] * MIN_PRODUCTS))
    assert load_catalogue(MIN_PRODUCTS).products == reference.products
    assert not marker.exists()
    assert sorted(p.name for p in entry.iterdir()) == ["products.json"]  # rebuilt in the JSON layout


@pytest.mark.parametrize("damage", ["truncated", "another stamp", "another key", "not json", "malformed row"])
def test_damaged_or_foreign_products_files_are_rebuilt(damage, cache, reference):
    text = products_to_json(reference.products, KEY)
    planted = {"truncated": text[: len(text) // 2], "not json": "\x80garbage",
               "another stamp": text.replace('"version":1', '"version":0', 1),
               "another key": text.replace(KEY, catalogue_key(MIN_PRODUCTS, 1), 1),
               "malformed row": text.replace('[[0,"', '[[5,"', 1)}[damage]
    assert planted != text
    entry = cache / f"catalogue-{KEY}"
    entry.mkdir(parents=True)
    (entry / "products.json").write_text(planted)
    with pytest.raises(ValueError):
        products_from_json(planted, KEY)
    assert load_catalogue(MIN_PRODUCTS).products == reference.products
    assert (entry / "products.json").read_text() == text


def test_products_json_round_trips_exactly(reference):
    assert products_from_json(products_to_json(reference.products, KEY), KEY) == reference.products


def test_a_planted_pickle_in_the_index_arrays_is_never_loaded(cache, tmp_path):
    marker = tmp_path / "pwned"
    search = search_module.load_search(load_catalogue(MIN_PRODUCTS))
    expected = search.scores("red shoes")
    (array,) = (cache / f"search-v2-{KEY}" / "bm25").glob("data.*.npy")
    np.save(array, np.array([WritesMarker(marker)], dtype=object), allow_pickle=True)
    search_module._cached.cache_clear()
    rebuilt = search_module.load_search(load_catalogue(MIN_PRODUCTS))
    assert not marker.exists()
    assert np.array_equal(rebuilt.scores("red shoes"), expected)
    assert np.load(array, allow_pickle=False).dtype != object  # the entry was rebuilt
