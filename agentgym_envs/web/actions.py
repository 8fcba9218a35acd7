"""WebShop's action grammar: ``search[keywords]`` and ``click[value]``.

>>> parse_action("click[Buy Now]")
('click', 'buy now')
>>> parse_action("search[ Red  Shoes ]")
('search', ' red  shoes ')
>>> parse_action("buy it") is None
True
"""

from __future__ import annotations

import re

_ACTION = re.compile(r"^(search|click)\s*\[(.*)\]$", re.IGNORECASE | re.DOTALL)

USAGE = ("Actions are search[keywords] (on the search page) and click[value], where value is a button, "
         "product id or option shown on the page, e.g. click[back to search], click[buy now].")


def parse_action(action: str) -> tuple[str, str] | None:
    """``(verb, argument)`` with the argument lowercased (WebShop lowercases it), or ``None``."""
    match = _ACTION.match(action.strip())
    if match is None:
        return None
    return match.group(1).lower(), match.group(2).lower()
