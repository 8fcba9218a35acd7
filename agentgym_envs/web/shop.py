"""The shop's page model: where a shopper is (:class:`Location`) and what that page shows (:class:`Page`).

One model serves every front end. The text modes render a :class:`Page` to WebShop's strings in-process
(:mod:`.text_view`); the web server renders the same :class:`Page` to HTML (:mod:`.html_view`), and the
browser mode reads the page back from Chromium. A page is a flat sequence of :class:`Element` s in reading
order (WebShop's observations are exactly the visible texts in document order), and every clickable
element carries the :class:`Location` it leads to, so following a click needs no other state.

A location is everything a page depends on besides the goal, and it is what the server's URLs encode:
page kind, query, results page, product, chosen options, sub-page. Pages are a pure function of
``(goal, location)``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

from .catalogue import Catalogue, Product, load_catalogue
from .reward import Reward, purchase_reward
from .search import ProductSearch, load_search
from .tasks import Goal

SEARCH, RESULTS, ITEM, SUB, DONE = "search", "results", "item", "sub", "done"
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")
PRODUCT_WINDOW = 10
#: Longest search query accepted (WebShop has no limit; this keeps URLs and typing bounded).
MAX_QUERY_CHARS = 500

BACK_TO_SEARCH, PREV_PAGE, NEXT_PAGE, BUY_NOW = "Back to Search", "< Prev", "Next >", "Buy Now"


@dataclass(frozen=True)
class Location:
    """Where the shopper is. ``options`` are ``(name, value)`` pairs in the product's option order."""

    kind: str = SEARCH
    query: str = ""
    page: int = 1
    asin: str = ""
    options: tuple[tuple[str, str], ...] = ()
    sub: str = ""

    def key(self) -> str:
        """A canonical text of the location (for ``state_key``)."""
        return json.dumps([self.kind, self.query, self.page, self.asin, self.options, self.sub])


@dataclass(frozen=True)
class Element:
    """One visible piece of a page. ``kind`` is ``text``, ``button``, ``product``, ``option`` or ``search``."""

    kind: str
    text: str
    target: Location | None = None
    selected: bool = False
    """An option that is chosen."""
    role: str = ""
    """What the text is (``instruction``, ``title``, ``price``, ``reward``, ``option-name``…), for styling."""
    method: str = "get"
    """``post`` for the purchase: the one click that changes server state."""

    @property
    def label(self) -> str:
        """What ``click[...]`` names: the lowercased text, as in WebShop."""
        return self.text.lower()


@dataclass(frozen=True)
class Page:
    location: Location
    elements: tuple[Element, ...]
    reward: Reward | None = None
    visited: frozenset[str] = field(default=frozenset())
    """ASINs opened this episode (only ``text_rich`` shows them, as "clicked" buttons)."""

    @cached_property
    def clickables(self) -> dict[str, Element]:
        """Clickable elements by label (the first one wins when labels repeat, as in WebShop's dict)."""
        out: dict[str, Element] = {}
        for e in self.elements:
            if e.target is not None:
                out.setdefault(e.label, e)
        return out

    @property
    def has_search_bar(self) -> bool:
        return any(e.kind == "search" for e in self.elements)


def normalize_query(text: str) -> str:
    """WebShop lowercases queries; here also whitespace is collapsed and characters a browser cannot type
    (controls, lone surrogates, characters outside the Basic Multilingual Plane) are dropped, so that the
    text and browser modes search for exactly the same string."""
    kept = (c for c in text.lower() if c.isprintable() and ord(c) < 0x10000 and not 0xD800 <= ord(c) < 0xE000)
    return " ".join("".join(kept).split())


class Shop:
    """Pages, transitions and purchases over one catalogue and its search index."""

    def __init__(self, catalogue: Catalogue, search: ProductSearch):
        self.catalogue, self.search = catalogue, search

    @classmethod
    def shared(cls, num_products: int = 10_000, seed: int = 0) -> Shop:
        """The process's shop for a catalogue: every env and the server share it (and its caches)."""
        return _shared_shop(int(num_products), int(seed))

    def results(self, query: str) -> tuple[int, ...]:
        """Catalogue indices of the (up to 50) hits for ``query``, best first."""
        return self.search.search(query)

    def reward(self, goal: Goal, location: Location) -> Reward:
        product = self.catalogue.get(location.asin)
        assert product is not None, f"no product {location.asin!r}: locations are validated first"
        return purchase_reward(self.catalogue, goal, product, dict(location.options))

    # ----------------------------------------------------------------- validation
    def validate(self, location: Location, *, show_attributes: bool = False) -> Location | None:
        """``location`` made consistent (known options only, page in range), or ``None`` when it names no
        product or sub-page that exists (the server answers 404)."""
        query = normalize_query(location.query)[:MAX_QUERY_CHARS]
        if location.kind == SEARCH:
            return Location()
        if location.kind == RESULTS:
            pages = max(1, -(-len(self.results(query)) // PRODUCT_WINDOW))
            return Location(RESULTS, query, min(max(1, location.page), pages))
        product = self.catalogue.get(location.asin)
        subs = SUB_PAGES if show_attributes else SUB_PAGES[:3]
        if location.kind not in (ITEM, SUB, DONE) or product is None:
            return None
        if location.kind == SUB and location.sub not in subs:
            return None
        chosen = dict(location.options)
        options = tuple((name, chosen[name]) for name, values in product.options if chosen.get(name) in values)
        return Location(location.kind, query, max(1, location.page), product.asin, options,
                        location.sub if location.kind == SUB else "")

    # ----------------------------------------------------------------- pages
    def page(self, goal: Goal, location: Location, *, show_attributes: bool = False,
             visited: frozenset[str] = frozenset()) -> Page:
        """The page at a validated ``location`` for a shopper pursuing ``goal``."""
        if location.kind == DONE:
            reward = self.reward(goal, location)
            return Page(location, _done_elements(location, reward), reward)
        head = (Element("text", "Instruction:"), Element("text", goal.instruction, role="instruction"))
        if location.kind == SEARCH:
            body = (Element("text", "WebShop", role="logo"), *head, Element("search", "Search", role="search"))
            return Page(location, body, visited=visited)
        back = Element("button", BACK_TO_SEARCH, Location())
        if location.kind == RESULTS:
            return Page(location, (*head, back, *self._results_body(location)), visited=visited)
        product = self.catalogue.get(location.asin)
        if location.kind == ITEM:
            prev = Element("button", PREV_PAGE, Location(RESULTS, location.query, location.page))
            body = self._item_body(product, location, show_attributes)
        else:
            prev = Element("button", PREV_PAGE, replace(location, kind=ITEM, sub=""))
            body = self._sub_body(product, location.sub)
        return Page(location, (*head, back, prev, *body), visited=visited)

    def _results_body(self, location: Location) -> list[Element]:
        hits = self.results(location.query)
        body = [Element("text", f"Page {location.page} (Total results: {len(hits)})", role="summary")]
        if location.page > 1:
            body.append(Element("button", PREV_PAGE, replace(location, page=location.page - 1)))
        if location.page * PRODUCT_WINDOW < len(hits):
            body.append(Element("button", NEXT_PAGE, replace(location, page=location.page + 1)))
        start = (location.page - 1) * PRODUCT_WINDOW
        for index in hits[start:start + PRODUCT_WINDOW]:
            product = self.catalogue.products[index]
            body += [Element("product", product.asin, Location(ITEM, location.query, location.page, product.asin)),
                     Element("text", product.title, role="title"), Element("text", product.price_text, role="price")]
        return body

    def _item_body(self, product: Product, location: Location, show_attributes: bool) -> list[Element]:
        body: list[Element] = []
        chosen = dict(location.options)
        for name, values in product.options:
            body.append(Element("text", name, role="option-name"))
            for value in values:
                target = replace(location, options=_with_option(product, location.options, name, value))
                body.append(Element("option", value, target, selected=chosen.get(name) == value))
        body += [Element("text", product.title, role="title"),
                 Element("text", f"Price: {product.price_text}", role="price"),
                 Element("text", f"Rating: {product.rating_text}", role="rating")]
        for sub in SUB_PAGES if show_attributes else SUB_PAGES[:3]:
            body.append(Element("button", sub, replace(location, kind=SUB, sub=sub)))
        body.append(Element("button", BUY_NOW, Location(DONE, asin=product.asin, options=location.options),
                            role="buy", method="post"))
        return body

    def _sub_body(self, product: Product, sub: str) -> list[Element]:
        details = self.catalogue.details(product)
        if sub == "Description":
            return [Element("text", details.description, role="description")]
        if sub == "Features":
            return [Element("text", b, role="bullet") for b in details.bullets]
        if sub == "Attributes":
            return [Element("text", a, role="attribute") for a in product.attributes]
        if not details.reviews:
            return [Element("text", "No reviews found", role="review")]
        out = []
        for title, stars, body in details.reviews:
            out += [Element("text", title, role="review-title"), Element("text", str(stars), role="stars"),
                    Element("text", body, role="review")]
        return out


@lru_cache(maxsize=4)
def _shared_shop(num_products: int, seed: int) -> Shop:
    catalogue = load_catalogue(num_products, seed)
    return Shop(catalogue, load_search(catalogue))


def _with_option(product: Product, options: tuple[tuple[str, str], ...], name: str, value: str):
    chosen = {**dict(options), name: value}
    return tuple((n, chosen[n]) for n, _ in product.options if n in chosen)


def _done_elements(location: Location, reward: Reward) -> tuple[Element, ...]:
    return (
        Element("text", "Thank you for shopping with us!", role="thanks"),
        Element("text", "Purchased", role="heading"), Element("text", "asin", role="field"),
        Element("text", location.asin, role="asin"), Element("text", "options", role="field"),
        Element("text", json.dumps(dict(location.options)), role="options"),
        Element("text", "Your score (min 0.0, max 1.0)", role="field"),
        Element("text", format_reward(reward.total), role="reward"),
    )


def format_reward(value: float) -> str:
    """The score as the done page prints it (rounded to 4 decimals; the env's reward is the exact float)."""
    return str(round(value, 4))
