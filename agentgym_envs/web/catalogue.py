"""The product catalogue: a deterministic generator of WebShop-like products, cached per process.

``load_catalogue(num_products, seed)`` returns the same products on every machine: each product is drawn
from its own SplitMix64 stream keyed by ``(seed, index)`` (NumPy promises stable bits, not stable
``integers``/``choice`` results across releases, so they are not used here). A product stores what search,
listing and the reward need (type, brand, title, price, attributes, options, review stars); its bullet
points, description and reviews are written on demand from a second stream and cached, which keeps a
100,000-product catalogue at a few tens of megabytes.

Search is made non-trivial on purpose: about a fifth of the products are near-duplicates of a recent
product (same brand, type and title pattern, one attribute swapped, other option values and price), and
several types share words across categories (see :mod:`.vocab`).

>>> catalogue = load_catalogue(1_000)
>>> product = catalogue.products[0]
>>> product.asin == load_catalogue(1_000).products[0].asin and product.asin.startswith("B0")
True
"""

from __future__ import annotations

import gc
import json
import math
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..household.rng import SplitMix64
from ..seeding import text_seed
from . import prose
from .cache import cached
from .vocab import BRAND_HEADS, BRAND_TAILS, CATEGORIES, MODIFIERS, OPTION_VALUES, VOCAB_VERSION, Category, ProductType

#: Every product type with its category, in a fixed order (a product stores its type's index here).
TYPES: tuple[tuple[Category, ProductType], ...] = tuple((c, t) for c in CATEGORIES for t in c.types)
#: Type ids of each category, in :data:`CATEGORIES` order.
TYPE_IDS: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i, (c, _) in enumerate(TYPES) if c is category) for category in CATEGORIES
)
BRANDS: tuple[str, ...] = tuple(h + t for h in BRAND_HEADS for t in BRAND_TAILS)
NEAR_DUPLICATE_PERCENT = 20
MIN_PRODUCTS = 1_000


@dataclass(frozen=True, slots=True)
class Product:
    """One listing. ``options`` maps option names to their values, in display order."""

    index: int
    asin: str
    type_id: int
    brand: str
    title: str
    price: float
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    stars: tuple[int, ...]
    """The star rating of each review (the review texts are generated on demand)."""

    @property
    def category(self) -> Category:
        return TYPES[self.type_id][0]

    @property
    def ptype(self) -> ProductType:
        return TYPES[self.type_id][1]

    @property
    def query(self) -> str:
        """WebShop's ``query`` field: the search the product was "scraped" with (its type)."""
        return self.ptype.query

    @property
    def product_category(self) -> str:
        """The category path, ``›``-joined as in WebShop's data."""
        return " › ".join((self.category.root, *self.ptype.path))

    @property
    def price_text(self) -> str:
        return f"${self.price:.2f}"

    @property
    def rating_text(self) -> str:
        return f"{sum(self.stars) / len(self.stars):.1f}" if self.stars else "N.A."

    def option_values(self, name: str) -> tuple[str, ...]:
        return next((values for n, values in self.options if n == name), ())


@dataclass(frozen=True, slots=True)
class Details:
    """The long text of a product page."""

    bullets: tuple[str, ...]
    description: str
    reviews: tuple[tuple[str, int, str], ...]
    """``(title, stars, body)`` per review."""


class Catalogue:
    """``num_products`` generated products; look them up by index or ASIN."""

    def __init__(self, num_products: int = 10_000, seed: int = 0, products: list[Product] | None = None):
        if num_products < MIN_PRODUCTS:
            raise ValueError(f"num_products must be at least {MIN_PRODUCTS:,} (the eval and test splits need "
                             f"1,500 goals), got {num_products:,}")
        self.num_products, self.seed = int(num_products), int(seed)
        self.products: list[Product] = []
        if products is not None:  # loaded from the disk cache
            self.products = products
        else:
            for i in range(self.num_products):
                self.products.append(_generate(self, i))
        self.by_asin: dict[str, int] = {p.asin: p.index for p in self.products}
        self._details = lru_cache(maxsize=8_192)(self._write_details)

    @property
    def key(self) -> str:
        """Names this catalogue in caches: vocabulary version, size and seed."""
        return catalogue_key(self.num_products, self.seed)

    def __len__(self) -> int:
        return len(self.products)

    def get(self, asin: str) -> Product | None:
        index = self.by_asin.get(asin.upper())
        return None if index is None else self.products[index]

    def details(self, product: Product) -> Details:
        """Bullets, description and reviews of ``product`` (written once, then cached)."""
        return self._details(product.index)

    def search_text(self, product: Product) -> str:
        """What the search index holds for a product: WebShop indexes title, description, first bullet, options."""
        details = self.details(product)
        options = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product.options)
        return " ".join((product.title, details.description, details.bullets[0], options)).lower()

    def _rng(self, kind: str, index: int) -> SplitMix64:
        return SplitMix64(text_seed("webshop", VOCAB_VERSION, kind, self.seed, index))

    def _write_details(self, index: int) -> Details:
        product, rng = self.products[index], self._rng("details", index)
        noun = product.ptype.query
        benefits = list(prose.BENEFITS)
        rng.shuffle(benefits)
        bullets = [f"{a.upper()}: {b.format(noun=noun)}" for a, b in zip(product.attributes, benefits, strict=False)]
        bullets.append(rng.choice(prose.EXTRA_BULLETS).format(noun=noun))
        attrs = _spoken_list(product.attributes[: 2 + rng.below(2)])
        sentences = [rng.choice(prose.OPENERS).format(brand=product.brand, noun=noun, attrs=attrs)]
        sentences += [rng.choice(prose.MIDDLES).format(brand=product.brand) for _ in range(1 + rng.below(2))]
        sentences.append(rng.choice(prose.CLOSERS))
        reviews = []
        for star in product.stars:
            title, body = rng.choice(prose.REVIEWS[star])
            reviews.append((title, star, body.format(noun=noun)))
        return Details(tuple(bullets), " ".join(sentences), tuple(reviews))


def _generate(catalogue: Catalogue, index: int) -> Product:
    """Product ``index``: a fresh draw, or with some probability a near-duplicate of a recent product."""
    rng = catalogue._rng("product", index)
    if index > 0 and rng.below(100) < NEAR_DUPLICATE_PERCENT:
        return _near_duplicate(catalogue.products[index - 1 - rng.below(min(index, 40))], index, rng)
    type_id = rng.choice(TYPE_IDS[rng.below(len(CATEGORIES))])
    category, ptype = TYPES[type_id]
    chosen = _sample(rng, ptype.attributes, 2) + _sample(rng, category.attributes, 1 + rng.below(3))
    return _assemble(index, type_id, rng.choice(BRANDS), tuple(chosen), rng.below(4), _price(rng, ptype), rng)


def _near_duplicate(base: Product, index: int, rng: SplitMix64) -> Product:
    """Same brand, type and title pattern as ``base``; one attribute swapped, new options and price."""
    category, ptype = TYPES[base.type_id]
    pool = [a for a in ptype.attributes + category.attributes if a not in base.attributes]
    attributes = list(base.attributes)
    attributes[rng.below(len(attributes))] = rng.choice(pool)
    price = round(max(1.0, base.price * (0.8 + rng.below(46) / 100)), 2)
    pattern = _title_pattern(base)
    return _assemble(index, base.type_id, base.brand, tuple(attributes), pattern, price, rng)


def _assemble(index: int, type_id: int, brand: str, attributes: tuple[str, ...], pattern: int, price: float,
              rng: SplitMix64) -> Product:
    category, ptype = TYPES[type_id]
    title = _title(ptype, brand, attributes, pattern, rng)
    options = () if rng.below(10) == 0 else tuple(
        (name, tuple(_sample(rng, OPTION_VALUES[key], 2 + rng.below(4), keep_order=True)))
        for name, key in ptype.options
    )
    stars = tuple(_star(rng) for _ in range(rng.below(5)))
    return Product(index, _asin(index), type_id, brand, title, price, attributes, options, stars)


def _title(ptype: ProductType, brand: str, attributes: tuple[str, ...], pattern: int, rng: SplitMix64) -> str:
    """A marketing title naming the brand, the type and up to two of the product's attributes."""
    noun = _title_case(ptype.query)
    a1, a2 = _title_case(attributes[0]), _title_case(attributes[-1])
    audience = f" for {rng.choice(ptype.audiences)}" if ptype.audiences else ""
    if pattern == 0:
        return f"{brand} {a1} {noun}{audience}, {a2}"
    if pattern == 1:
        return f"{brand} {rng.choice(MODIFIERS)} {noun} - {a1} & {a2}"
    if pattern == 2:
        return f"{a1} {noun} by {brand}{audience} | {rng.choice(MODIFIERS)} Quality"
    return f"{brand} {noun}{audience}"


def _title_pattern(product: Product) -> int:
    """Which of :func:`_title`'s patterns a title follows (near-duplicates reuse their base's)."""
    if " by " in product.title and " | " in product.title:
        return 2
    if " - " in product.title:
        return 1
    return 0 if "," in product.title else 3


def _price(rng: SplitMix64, ptype: ProductType) -> float:
    low, high = ptype.price
    return math.floor(low + (high - low) * rng.below(10_000) / 10_000) + 0.99


def _star(rng: SplitMix64) -> int:
    return (5, 5, 5, 4, 4, 4, 3, 2, 1)[rng.below(9)]


def _sample(rng: SplitMix64, items: tuple[str, ...], k: int, *, keep_order: bool = False) -> list[str]:
    pool = list(items)
    rng.shuffle(pool)
    chosen = pool[: min(k, len(pool))]
    return sorted(chosen, key=items.index) if keep_order else chosen


def _asin(index: int) -> str:
    """A unique Amazon-looking id: a bijective 40-bit mix of ``index``, in base 36 after ``B0``."""
    mask = (1 << 40) - 1
    x = ((index + 0x5EED5) * 0x9E3779B97F) & mask
    x ^= x >> 17
    x = (x * 0xB5297A4D3) & mask  # odd multiplier: a bijection modulo 2**40
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = []
    for _ in range(8):
        x, r = divmod(x, 36)
        out.append(digits[r])
    return "B0" + "".join(reversed(out))


def _title_case(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def _spoken_list(items: tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def catalogue_key(num_products: int, seed: int) -> str:
    return f"v{VOCAB_VERSION}-n{num_products}-s{seed}"


#: Layout of the cached ``products.json``; a different stamp makes the entry rebuild.
PRODUCTS_FORMAT = {"format": "agentgym-web-products", "version": 1}


def products_to_json(products: list[Product], key: str) -> str:
    """The products as JSON (no code runs when it is read back), stamped with the layout and catalogue key."""
    rows = [[p.index, p.asin, p.type_id, p.brand, p.title, p.price, p.attributes, p.options, p.stars] for p in products]
    return json.dumps({**PRODUCTS_FORMAT, "key": key, "products": rows}, separators=(",", ":"))


def products_from_json(text: str, key: str) -> list[Product]:
    """Products written by :func:`products_to_json` for ``key``; ``ValueError`` for anything else.

    The garbage collector is paused meanwhile: the rows are acyclic, and its passes over the growing heap
    of tuples would more than double the load time (about 80 ms for 10,000 products, a pickle's 50 ms).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _rows_to_products(text, key)
    finally:
        if enabled:
            gc.enable()


def _rows_to_products(text: str, key: str) -> list[Product]:
    data = json.loads(text)
    if not isinstance(data, dict) or {k: data.get(k) for k in PRODUCTS_FORMAT} != PRODUCTS_FORMAT or data.get("key") != key:
        raise ValueError(f"expected a products file stamped {PRODUCTS_FORMAT} for {key}, got another")
    products = [Product(index, asin, type_id, brand, title, price, tuple(attributes),
                        tuple([(name, tuple(values)) for name, values in options]), tuple(stars))
                for index, asin, type_id, brand, title, price, attributes, options, stars in data["products"]]
    if [p.index for p in products] != list(range(len(products))):
        raise ValueError("expected products numbered 0, 1, 2, ... in a products file, got another order")
    return products


@lru_cache(maxsize=4)
def _cached(num_products: int, seed: int) -> Catalogue:
    key = catalogue_key(num_products, seed)

    def save(catalogue: Catalogue, path: Path) -> None:
        (path / "products.json").write_text(products_to_json(catalogue.products, key), encoding="utf-8")

    def load(path: Path) -> Catalogue:
        products = products_from_json((path / "products.json").read_text(encoding="utf-8"), key)
        if len(products) != num_products:
            raise ValueError("cache entry does not match its key")
        return Catalogue(num_products, seed, products)

    return cached(f"catalogue-{key}", lambda: Catalogue(num_products, seed), save, load)


_LOCK = threading.Lock()


def load_catalogue(num_products: int = 10_000, seed: int = 0) -> Catalogue:
    """The catalogue for ``(num_products, seed)``, built once per process and shared (never mutated)."""
    with _LOCK:  # one build even when many threads make envs at once
        return _cached(int(num_products), int(seed))
