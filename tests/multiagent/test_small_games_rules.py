"""Kuhn poker (payoffs and the equilibrium), Liar's Dice (bids, probabilities, challenges) and RPS rules."""

from __future__ import annotations

from fractions import Fraction
from itertools import permutations, product

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym_envs.games.multiagent.kuhn_poker import policy as kuhn_policy
from agentgym_envs.games.multiagent.kuhn_poker.rules import CARDS, KuhnPoker
from agentgym_envs.games.multiagent.liars_dice.policy import scripted as liars_scripted
from agentgym_envs.games.multiagent.liars_dice.rules import LiarsDice, higher_bids, prob_at_least
from agentgym_envs.games.multiagent.rps.policy import always_rock, scripted as rps_scripted
from agentgym_envs.games.multiagent.rps.rules import MOVES, RockPaperScissors, round_winner


# ----------------------------------------------------------------------------- Kuhn poker
def kuhn_game(deal: tuple[int, int], history: list[str]) -> KuhnPoker:
    game = KuhnPoker(np.random.default_rng(0))
    game.cards = deal
    for action in history:
        game.apply(action)
    return game


@pytest.mark.parametrize("history, chips_when_p0_holds_k", [
    (["check", "check"], 1), (["bet", "call"], 2), (["bet", "fold"], 1),
    (["check", "bet", "call"], 2), (["check", "bet", "fold"], -1),
])
def test_kuhn_payoffs(history, chips_when_p0_holds_k):
    assert kuhn_game((2, 0), history).chips() == (chips_when_p0_holds_k, -chips_when_p0_holds_k)
    folded = history[-1] == "fold"
    assert kuhn_game((0, 2), history).chips()[0] == (chips_when_p0_holds_k if folded else -chips_when_p0_holds_k)


def expected_chips(strategies) -> float:
    """Player 0's expected chips when player i plays ``strategies[i](view) -> {action: prob}``."""
    def value(game: KuhnPoker) -> float:
        if game.current_player() is None:
            return game.chips()[0]
        p = game.current_player()
        total = 0.0
        for action, prob in strategies[p](game.view(p)).items():
            if prob > 0:
                total += prob * value(kuhn_game(game.cards, game.history + [action]))
        return total
    return float(np.mean([value(kuhn_game(deal, [])) for deal in permutations(range(3), 2)]))


def pure(player: int, choice: dict):
    """A deterministic strategy: at information set (card, history) take the aggressive move iff ``choice``."""
    def act(view):
        aggressive, passive = ("call", "fold") if view["history"][-1:] == ["bet"] else ("bet", "check")
        return {aggressive: 1.0, passive: 0.0} if choice[(view["card"], tuple(view["history"]))] else {aggressive: 0.0, passive: 1.0}
    return act


def test_kuhn_scripted_policy_is_a_nash_equilibrium():
    game_value = -1 / 18
    assert expected_chips([kuhn_policy.strategy, kuhn_policy.strategy]) == pytest.approx(game_value)
    sets = {0: [(), ("check", "bet")], 1: [("check",), ("bet",)]}
    for deviator in (0, 1):
        keys = [(c, h) for c in CARDS for h in sets[deviator]]
        values = []
        for bits in product([False, True], repeat=len(keys)):
            strategies = [kuhn_policy.strategy, kuhn_policy.strategy]
            strategies[deviator] = pure(deviator, dict(zip(keys, bits)))
            values.append(expected_chips(strategies))
        best_for_deviator = max(values) if deviator == 0 else min(values)
        assert best_for_deviator == pytest.approx(game_value), "no pure deviation gains against the equilibrium"


# ----------------------------------------------------------------------------- Liar's Dice
def test_bids_are_listed_in_strictly_increasing_order():
    bids = higher_bids(None, 6)
    assert len(bids) == 36 and bids == sorted(bids) and len(set(bids)) == 36
    for i, bid in enumerate(bids):
        assert higher_bids(bid, 6) == bids[i + 1:]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_probability_matches_enumeration(n):
    for needed in range(0, n + 2):
        hits = sum(1 for roll in product(range(1, 7), repeat=n) if roll.count(6) >= needed)
        assert prob_at_least(needed, n) == pytest.approx(float(Fraction(hits, 6**n)))


def test_challenge_decides_the_loser():
    game = LiarsDice(np.random.default_rng(0), dice=3)
    game.dice = [[2, 2, 5], [2, 6, 6]]
    game.apply("bid 3 2")
    game.apply("liar")  # three 2s exist: the bid holds, the challenger (player 1) loses
    assert game.returns() == (1.0, -1.0) and game.view(0)["opponent_dice"] == [2, 6, 6]
    game = LiarsDice(np.random.default_rng(0), dice=3)
    game.dice = [[2, 2, 5], [2, 6, 6]]
    game.apply("bid 3 6")
    game.apply("liar")
    assert game.returns() == (-1.0, 1.0)


@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_random_rounds_end_and_scripted_moves_are_legal(seed, dice):
    rng = np.random.default_rng(seed)
    game = LiarsDice(rng, dice=dice)
    for moves in range(6 * 2 * dice + 2):
        if game.current_player() is None:
            break
        p, legal = game.current_player(), game.legal_actions()
        assert liars_scripted(game.view(p), legal, rng) in legal
        game.apply(legal[int(rng.integers(len(legal)))])
    assert game.returns() is not None and sum(game.returns()) == 0


def test_scripted_calls_an_impossible_bid():
    game = LiarsDice(np.random.default_rng(0), dice=2)
    game.dice = [[1, 2], [3, 4]]
    game.apply("bid 3 6")  # at most one six can be hidden from player 1, who holds none
    assert liars_scripted(game.view(1), game.legal_actions(), np.random.default_rng(0)) == "liar"


# ----------------------------------------------------------------------------- Rock-Paper-Scissors
def test_round_winner_table():
    assert [round_winner(a, b) for a in MOVES for b in MOVES] == [None, 1, 0, 0, None, 1, 1, 0, None]


def test_match_result_and_hidden_commitment():
    game = RockPaperScissors(rounds=3)
    game.apply("rock")
    assert "committed" not in game.view(1) and game.view(0)["committed"] == "rock"
    game.apply("paper")  # round 1: player 1 wins
    game.play_round("rock", "scissors")  # round 2: player 0 wins
    assert game.returns() is None and game.view(1)["score"] == [1, 1]
    game.play_round("paper", "paper")
    assert game.returns() == (0.0, 0.0)


def test_frequency_counter_exploits_a_constant_opponent():
    rng = np.random.default_rng(0)
    game = RockPaperScissors(rounds=20)
    while game.current_player() is not None:
        game.play_round(always_rock(game.view(0), list(MOVES), rng), rps_scripted(game.view(1), list(MOVES), rng))
    assert game.wins()[1] >= 18 and game.returns() == (-1.0, 1.0)
