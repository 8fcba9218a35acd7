"""The fuzzy string matching WebShop's reward uses, without its dependencies.

WebShop scores attribute and option matches with ``thefuzz.fuzz.token_set_ratio(a, b) > 85`` and reduces
colour options with ``normalize_color``. This module reproduces both: ``token_set_ratio`` follows
rapidfuzz's algorithm (thefuzz's backend) on thefuzz's default preprocessing (lowercase, non-alphanumerics
to spaces, ASCII only) and rounds like thefuzz; the similarity of two strings is the normalised Indel
similarity ``2·LCS / (len(a) + len(b))``. Inputs are short (attributes, option values), so a plain
O(n·m) longest-common-subsequence is fast enough and exact.

>>> token_set_ratio("sulfate free", "free of sulfate")
100
>>> token_set_ratio("long lasting", "long battery life") > 85
False
>>> normalize_color("navy blue")
'blue'
"""

from __future__ import annotations

import re
from functools import lru_cache

from .vocab import COLOR_SET

#: WebShop's threshold: a match needs a token-set ratio strictly above this.
MATCH_THRESHOLD = 85

_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def full_process(text: str) -> str:
    """thefuzz's ``full_process`` with ``force_ascii``: ASCII only, lowercase, non-alphanumerics to spaces."""
    ascii_text = text.encode("ascii", "ignore").decode().lower()
    return _NON_ALNUM.sub(" ", ascii_text).strip()


def _lcs(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b):
            current.append(previous[j] + 1 if ca == cb else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _similarity(a: str, b: str) -> float:
    """Normalised Indel similarity in percent (rapidfuzz's ``fuzz.ratio``)."""
    total = len(a) + len(b)
    return 100.0 if total == 0 else 100.0 * 2 * _lcs(a, b) / total


@lru_cache(maxsize=65_536)
def token_set_ratio(a: str, b: str) -> int:
    """thefuzz's ``token_set_ratio``: compare the shared tokens with each side's extra tokens (0–100)."""
    tokens_a, tokens_b = set(full_process(a).split()), set(full_process(b).split())
    if not tokens_a or not tokens_b:
        return 0
    shared, only_a, only_b = tokens_a & tokens_b, tokens_a - tokens_b, tokens_b - tokens_a
    if shared and (not only_a or not only_b):
        return 100
    sect, diff_a, diff_b = " ".join(sorted(shared)), " ".join(sorted(only_a)), " ".join(sorted(only_b))
    combined_a = f"{sect} {diff_a}" if sect else diff_a
    combined_b = f"{sect} {diff_b}" if sect else diff_b
    best = _similarity(combined_a, combined_b)
    if sect:
        best = max(best, _similarity(sect, combined_a), _similarity(sect, combined_b))
    return int(round(best))


def fuzzy_match(a: str, b: str) -> bool:
    """WebShop's match test: ``token_set_ratio(a, b) > 85``."""
    return token_set_ratio(a, b) > MATCH_THRESHOLD


def normalize_color(value: str) -> str:
    """The first base colour named in ``value`` (a substring test, as WebShop's), else ``value`` unchanged."""
    for color in COLOR_SET:
        if color in value:
            return color
    return value
