"""Cards and a 7-card poker hand evaluator. Pure.

A card is an int ``0..51``: ``rank = card // 4`` (0 is a deuce, 12 an ace) and ``suit = card % 4``.
:func:`evaluate` maps any 5–7 cards to a tuple that compares like poker hands (higher is better, equal
tuples split the pot): ``(category, *tie-break ranks)`` with categories from high card (0) to straight
flush (8). It looks at rank and suit counts instead of enumerating the 21 five-card subsets, so the test
suite checks it against exactly that brute force.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

RANKS = "23456789TJQKA"
SUITS = "cdhs"
CATEGORIES = ("high card", "pair", "two pair", "three of a kind", "straight", "flush", "full house",
              "four of a kind", "straight flush")
HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)

HandValue = tuple[int, ...]


def card_name(card: int) -> str:
    """``"As"``, ``"Td"``, ``"2c"``."""
    return RANKS[card // 4] + SUITS[card % 4]


def parse_card(name: str) -> int:
    return RANKS.index(name[0].upper()) * 4 + SUITS.index(name[1].lower())


def straight_high(ranks: set[int]) -> int | None:
    """Highest rank of a 5-card straight within ``ranks`` (the wheel A-2-3-4-5 counts, high card 5)."""
    for high in range(12, 3, -1):
        if all(r in ranks for r in range(high - 4, high + 1)):
            return high
    if {12, 0, 1, 2, 3} <= ranks:
        return 3
    return None


def evaluate(cards: Sequence[int]) -> HandValue:
    """Value of the best five-card hand among ``cards`` (5 to 7 cards)."""
    suits = Counter(c % 4 for c in cards)
    suit, n_suited = suits.most_common(1)[0]
    if n_suited >= 5:
        flush_ranks = sorted((c // 4 for c in cards if c % 4 == suit), reverse=True)
        high = straight_high(set(flush_ranks))
        if high is not None:
            return (STRAIGHT_FLUSH, high)
    counts = Counter(c // 4 for c in cards)
    groups = sorted(counts.items(), key=lambda rc: (rc[1], rc[0]), reverse=True)  # by count, then rank
    ranks_desc = sorted(counts, reverse=True)
    if groups[0][1] == 4:
        quad = groups[0][0]
        return (QUADS, quad, max(r for r in ranks_desc if r != quad))
    trips = [r for r, n in groups if n == 3]
    pairs = [r for r, n in groups if n == 2]
    if trips and (len(trips) > 1 or pairs):
        return (FULL_HOUSE, trips[0], max(trips[1:] + pairs))
    if n_suited >= 5:
        return (FLUSH, *flush_ranks[:5])
    high = straight_high(set(counts))
    if high is not None:
        return (STRAIGHT, high)
    if trips:
        return (TRIPS, trips[0], *[r for r in ranks_desc if r != trips[0]][:2])
    if len(pairs) >= 2:
        top, second = pairs[0], pairs[1]
        return (TWO_PAIR, top, second, max(r for r in ranks_desc if r not in (top, second)))
    if pairs:
        return (PAIR, pairs[0], *[r for r in ranks_desc if r != pairs[0]][:3])
    return (HIGH_CARD, *ranks_desc[:5])


def describe(value: HandValue) -> str:
    """``"two pair, K and 7"``-style summary of a hand value."""
    category, *ranks = value
    if category in (STRAIGHT, STRAIGHT_FLUSH):
        return f"{CATEGORIES[category]}, {RANKS[ranks[0]]} high"
    if category in (FLUSH, HIGH_CARD):
        return f"{CATEGORIES[category]}, {RANKS[ranks[0]]} high"
    if category in (TWO_PAIR, FULL_HOUSE):
        return f"{CATEGORIES[category]}, {RANKS[ranks[0]]} and {RANKS[ranks[1]]}"
    return f"{CATEGORIES[category]}, {RANKS[ranks[0]]}"
