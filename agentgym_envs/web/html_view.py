"""HTML pages and URLs of the shop: the browser front end of the page model.

URLs encode the whole :class:`~agentgym_envs.web.shop.Location` (WebShop's URLs do the same), so a page
is a pure function of ``(session goal, URL)`` and the browser mode reads where it is from the address bar:

=========================================  ============================================================
``/s/<sid>/``                              search page
``/s/<sid>/results?q=…&p=2``               results, page 2
``/s/<sid>/item/<ASIN>?q=…&p=2&o.size=…``  item page with chosen options (``o.<name>=<value>``)
``/s/<sid>/item/<ASIN>/Reviews?…``         a sub-page (Description, Features, Reviews, Attributes)
``POST /s/<sid>/buy/<ASIN>?o.…``           Buy Now; answers 303 to the done page
``/s/<sid>/done/<ASIN>?o.…``               done page with the score
=========================================  ============================================================

Every element of a page becomes one HTML element holding one text node, so the visible texts in document
order are exactly the text-mode observation. Every piece of text and every attribute value goes through
:func:`html.escape` (queries, instructions, option values: all of it); pages carry no script at all, and
the server's Content-Security-Policy forbids scripts besides.
"""

from __future__ import annotations

import html
from urllib.parse import parse_qs, quote, urlencode

from .shop import DONE, ITEM, RESULTS, SEARCH, SUB, SUB_PAGES, Element, Location, Page

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;background:#f6f6f4;color:#222}
main{max-width:980px;margin:0 auto;padding:24px}
.logo{font-size:32px;font-weight:700;text-align:center;margin:24px 0}
.instruction{background:#fff8dc;padding:8px 12px;border-radius:6px;margin-bottom:8px}
.btn{display:inline-block;margin:4px 6px 4px 0;padding:6px 12px;border-radius:6px;background:#2c6fbb;color:#fff;
 text-decoration:none;border:0;font-size:15px;cursor:pointer}
.buy{background:#e07b00;font-size:17px}
.product-link{display:block;margin-top:14px;font-weight:700;color:#2c6fbb}
.title{font-size:18px;font-weight:600;margin-top:6px}
.price,.rating,.summary{color:#555;margin:4px 0}
.option-name{font-weight:700;margin-top:10px}
.option{display:inline-block;margin:3px;padding:4px 10px;border:1px solid #888;border-radius:14px;color:#222;
 text-decoration:none}
.option.selected{background:#2c6fbb;color:#fff;border-color:#2c6fbb}
.search{display:flex;gap:8px;margin:16px 0}#search_input{flex:1;padding:8px;font-size:16px}
.reward{font-size:28px;font-weight:700}
"""


def escape(text: str) -> str:
    return html.escape(text, quote=True)


# ----------------------------------------------------------------------------- URLs
def location_url(sid: str, location: Location) -> str:
    """The path (and query string) of ``location`` in session ``sid``."""
    base = f"/s/{quote(sid, safe='')}"
    options = [(f"o.{name}", value) for name, value in location.options]
    if location.kind == SEARCH:
        return base + "/"
    if location.kind == RESULTS:
        return f"{base}/results?" + urlencode([("q", location.query), ("p", location.page)])
    asin = quote(location.asin, safe="")
    if location.kind == DONE:
        return f"{base}/done/{asin}" + ("?" + urlencode(options) if options else "")
    query = "?" + urlencode([("q", location.query), ("p", location.page), *options])
    if location.kind == SUB:
        return f"{base}/item/{asin}/{quote(location.sub, safe='')}{query}"
    return f"{base}/item/{asin}{query}"


def buy_url(sid: str, location: Location) -> str:
    return location_url(sid, location).replace("/done/", "/buy/", 1)


def parse_location(parts: list[str], query_string: str) -> Location | None:
    """The location of a session path's ``parts`` (after ``/s/<sid>/``), unvalidated; ``None`` if unknown."""
    params = parse_qs(query_string, keep_blank_values=True, max_num_fields=64)
    first = lambda key, default="": params.get(key, [default])[0]  # noqa: E731
    options = tuple((k[2:], v[0]) for k, v in params.items() if k.startswith("o.") and v)
    try:
        page = int(first("p", "1")[:6])
    except ValueError:
        page = 1
    query = first("q")
    if parts in ([], [""]):
        return Location()
    if parts == ["results"]:
        return Location(RESULTS, query, page)
    if len(parts) == 2 and parts[0] in ("done", "buy"):
        return Location(DONE, asin=parts[1], options=options)
    if len(parts) == 2 and parts[0] == "item":
        return Location(ITEM, query, page, parts[1], options)
    if len(parts) == 3 and parts[0] == "item" and parts[2] in SUB_PAGES:
        return Location(SUB, query, page, parts[1], options, parts[2])
    return None


# ----------------------------------------------------------------------------- pages
def render_page(page: Page, sid: str) -> str:
    """The whole HTML document of ``page`` in session ``sid``; clickables are numbered ``e1``, ``e2``, …"""
    parts, number = [], 0
    for element in page.elements:
        if element.target is not None or element.kind == "search":
            number += 1
        parts.append(_element(element, sid, number))
    reward = "" if page.reward is None else f' data-reward="{page.reward.total!r}"'
    return document("WebShop", "\n".join(parts), f' data-kind="{page.location.kind}"{reward}')


def document(title: str, body: str, body_attrs: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<style>{STYLE}</style></head>\n<body{body_attrs}><main>\n{body}\n</main></body></html>\n')


def _element(e: Element, sid: str, number: int) -> str:
    text, role = escape(e.text), escape(e.role)
    if e.kind == "search":
        action = escape(location_url(sid, Location(RESULTS)).split("?")[0])
        return (f'<form class="search" method="get" action="{action}">'
                f'<input id="search_input" name="q" type="text" placeholder="Search..." maxlength="500" '
                f'aria-label="Search query" autocomplete="off"><button type="submit" class="btn" id="e{number}" '
                f'data-id="{number}">{text}</button></form>')
    if e.target is None:
        return f'<div class="{role or "text"}">{text}</div>'
    label = f'id="e{number}" data-id="{number}" data-label="{escape(e.label)}"'
    if e.method == "post":
        action = escape(buy_url(sid, e.target))
        return (f'<form method="post" action="{action}"><button type="submit" class="btn {role}" {label}>'
                f'{text}</button></form>')
    href = escape(location_url(sid, e.target))
    if e.kind == "product":
        return f'<a class="product-link" {label} href="{href}">{text}</a>'
    if e.kind == "option":
        selected = " selected" if e.selected else ""
        return (f'<a class="option{selected}" role="radio" aria-checked="{str(e.selected).lower()}" {label} '
                f'href="{href}">{text}</a>')
    return f'<a class="btn" {label} href="{href}">{text}</a>'


def index_page(splits: dict[str, int]) -> str:
    """The front page: start a shopping session on any task (for people; envs use ``/start`` directly)."""
    choices = "".join(f'<option value="{escape(s)}">{escape(s)} ({n:,} tasks)</option>' for s, n in splits.items())
    body = (f'<div class="logo">WebShop</div><form method="get" action="/start">'
            f'<label>Split <select name="split">{choices}</select></label> '
            f'<label>Task <input name="task" type="number" min="0" value="0"></label> '
            f'<label><input type="checkbox" name="attrs" value="1"> show Attributes</label> '
            f'<button class="btn" type="submit">Start shopping</button></form>')
    return document("WebShop", body)


def error_page(status: int, message: str) -> str:
    return document(f"{status}", f'<div class="logo">{status}</div><div class="text">{escape(message)}</div>')
