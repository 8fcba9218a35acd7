"""Limit Hold'em: the 7-card evaluator against a brute-force reference, and the betting rules."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.games.multiagent.holdem.cards import CATEGORIES, evaluate, parse_card
from agentgym_envs.games.multiagent.holdem.policy import hand_strength, scripted
from agentgym_envs.games.multiagent.holdem.rules import MAX_BETS, MAX_LOSS, LimitHoldem


def reference_five(cards) -> tuple:
    """A textbook five-card classifier, written independently of the evaluator under test."""
    ranks = sorted((c // 4 for c in cards), reverse=True)
    counts = Counter(ranks)
    shape = sorted(counts.values(), reverse=True)
    ordered = sorted(counts, key=lambda r: (-counts[r], -r))
    flush = len({c % 4 for c in cards}) == 1
    distinct = sorted(set(ranks), reverse=True)
    high = None
    if len(distinct) == 5 and distinct[0] - distinct[4] == 4:
        high = distinct[0]
    elif distinct == [12, 3, 2, 1, 0]:
        high = 3  # the wheel, five high
    if high is not None and flush:
        return (8, high)
    table = {(4, 1): 7, (3, 2): 6}
    if tuple(shape) in table:
        return (table[tuple(shape)], *ordered)
    if flush:
        return (5, *ranks)
    if high is not None:
        return (4, high)
    category = {(3, 1, 1): 3, (2, 2, 1): 2, (2, 1, 1, 1): 1}.get(tuple(shape), 0)
    return (category, *ordered) if category else (0, *ranks)


def reference(cards) -> tuple:
    return max(reference_five(five) for five in combinations(cards, 5))


def cards_of(text: str) -> list[int]:
    return [parse_card(c) for c in text.split()]


@given(st.lists(st.integers(0, 51), min_size=5, max_size=7, unique=True))
def test_evaluator_matches_brute_force(cards):
    assert evaluate(cards) == reference(cards)


@pytest.mark.parametrize("deck", [range(52), range(0, 52, 2), range(32, 52), [c for c in range(52) if c % 4 == 0] + list(range(1, 52, 8))],
                         ids=["full", "two-suits", "high-ranks", "mostly-one-suit"])
def test_evaluator_matches_brute_force_on_random_seven_card_hands(deck):
    rng, deck = np.random.default_rng(0), np.array(list(deck))
    seen = set()
    for _ in range(1500):
        hand = [int(c) for c in rng.choice(deck, size=7, replace=False)]
        value = evaluate(hand)
        assert value == reference(hand), hand
        seen.add(value[0])
    assert len(seen) >= 4  # the restricted decks reach flushes, straights, full houses, quads


@pytest.mark.parametrize("better, worse", [
    ("As Ks Qs Js Ts 2d 3c", "9h 9d 9s 9c Ah 2d 3c"),  # royal flush > quads
    ("5h 4h 3h 2h Ah Kd Kc", "Kh Kd Ks Qc Qd 2d 3c"),  # steel wheel > full house
    ("Kh Kd Ks Qc Qd 2d 3c", "Qh Qd Qs Kc Kd 2d 3c"),  # kings full > queens full
    ("2h 7h 9h Jh Kh 2d 3c", "6c 5d 4s 3h 2c Kd Kh"),  # flush > straight
    ("6c 5d 4s 3h 2c 9d 9h", "Ac 2d 3s 4h 5c 9d 9s"),  # six-high straight > wheel
    ("Ac 2d 3s 4h 5c 9d Jh", "Ah Ad As Kc Qd 2h 3c"),  # wheel > trips
    ("Ah Ad Kc Kd 2h 3c 4d", "Ah Ad Qc Qd Jh Tc 9d"),  # aces up > aces and queens
    ("Ah Ad Kc Qd Jh 3c 4d", "Ah Ad Kc Qd Th 3c 4d"),  # kicker
])
def test_known_orderings(better, worse):
    assert evaluate(cards_of(better)) > evaluate(cards_of(worse))


def test_categories_are_named():
    assert CATEGORIES[evaluate(cards_of("As Ks Qs Js Ts 2d 3c"))[0]] == "straight flush"


def test_preflop_call_gives_the_big_blind_its_option_then_the_flop():
    game = LimitHoldem(np.random.default_rng(0))
    assert game.legal_actions() == ["fold", "call", "raise"] and game.current_player() == 0
    game.apply("call")
    assert game.current_player() == 1 and game.legal_actions() == ["check", "raise"]
    game.apply("check")
    assert game.street == 1 and game.current_player() == 1 and game.legal_actions() == ["check", "bet"]
    assert game.contrib == [2, 2] and len(game.view(0)["board"]) == 3


def test_bets_are_capped_per_street():
    game = LimitHoldem(np.random.default_rng(0))
    for action in ("raise", "raise", "raise"):  # big blind + 3 raises = 4 bets
        game.apply(action)
    assert game.bets == MAX_BETS and game.legal_actions() == ["fold", "call"]
    game.apply("call")
    assert game.street == 1 and game.contrib == [8, 8]


def test_fold_and_split_payoffs():
    game = LimitHoldem(np.random.default_rng(0))
    game.apply("fold")
    assert game.chips() == (-1, 1) and game.returns() == (-1 / MAX_LOSS, 1 / MAX_LOSS)
    game = LimitHoldem(np.random.default_rng(0))
    game.hole, game.board = (cards_of("2c 3d"), cards_of("2h 3s")), cards_of("As Ks Qs Js Ts")
    game.apply("call")
    game.apply("check")
    for _ in range(3):
        game.apply("check")
        game.apply("check")
    assert game.finished and game.chips() == (0, 0) and "opponent_hole" in game.view(0)


@given(st.integers(0, 2**32 - 1))
def test_random_hands_stay_consistent(seed):
    rng = np.random.default_rng(seed)
    game = LimitHoldem(rng)
    for _ in range(100):
        if game.current_player() is None:
            break
        legal = game.legal_actions()
        assert legal and ("fold" in legal) == (game.to_call() > 0)
        game.apply(legal[int(rng.integers(len(legal)))])
    chips = game.chips()
    assert chips is not None and sum(chips) == 0 and abs(chips[0]) <= MAX_LOSS
    if game.folded is None:
        assert game.contrib[0] == game.contrib[1] and len(game.view(0)["board"]) == 5


def test_hand_strength_orders_hands_and_scripted_is_legal():
    rng = np.random.default_rng(0)
    assert hand_strength(cards_of("As Ad"), [], rng, samples=300) > 0.75 > hand_strength(cards_of("7c 2d"), [], rng, samples=300)
    game = LimitHoldem(rng)
    while game.current_player() is not None:
        p = game.current_player()
        assert scripted(game.view(p), game.legal_actions(), rng) in game.legal_actions()
        game.apply(scripted(game.view(p), game.legal_actions(), rng))
