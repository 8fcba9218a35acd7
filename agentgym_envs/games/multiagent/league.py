"""An Elo league: play policies against each other in a game and rank them with uncertainty.

>>> from agentgym_envs.games.multiagent.league import League
>>> result = League("agentgym/TicTacToe-v0", {"scripted": "scripted", "random": "random"}, games_per_pair=20).play()
>>> [r.name for r in result.ratings()]
['scripted', 'random']

**Schedule.** Every pair of policies plays ``games_per_pair`` games. Games ``2k`` and ``2k + 1`` use the
same seed ``seed + k`` (the same cards and dice) with the seats swapped, so neither the deal nor the first
move favours a policy: the "duplicate" format of poker-bot competitions.

**Scoring.** ``scoring="duplicate"`` (default): each duplicate pair of games is one comparison, won by the
policy with the larger total payoff over both seats (½ each on equal totals). This is what makes poker
leagues meaningful: over one hand, an equilibrium Kuhn poker strategy wins *chips* from a random player
but not more *hands* (it folds its jacks), and the deal's luck cancels between the two seats.
``scoring="game"``: every game is a comparison, won by the higher payoff.

**Ratings.** A Bradley–Terry model, ``P(i beats j) = σ(θ_i − θ_j)`` (draws count as half a win each way),
fitted to all games at once by maximum a posteriori with a Gaussian prior ``θ ~ N(0, PRIOR_SD²)`` (so a
policy that never loses still gets a finite rating), then centred on the pool and expressed as Elo
(``1500 + 400·θ/ln 10``). Intervals (95% by default) come from either

* ``method="laplace"`` (default): the Gaussian approximation of the posterior at its mode (inverse Hessian),
  a Bayesian interval that stays honest when one policy sweeps another; or
* ``method="bootstrap"``: percentiles of the ratings refitted on comparisons resampled with replacement
  (these collapse to a point when one policy wins every comparison: prefer Laplace there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from statistics import NormalDist
from typing import Any, Callable, Mapping

import numpy as np

from ...registration import make_multi
from .arena import play_game
from ...policies.opponents import Opponent, resolve_opponent

ELO_PER_LOGIT = 400.0 / math.log(10.0)
ELO_MEAN = 1500.0
PRIOR_SD = 2.0  # in logits (about 350 Elo)


@dataclass(frozen=True)
class Match:
    """One game: policy names by seat (``first`` is player_0), the seed, and each one's payoff."""

    first: str
    second: str
    seed: int
    payoffs: tuple[float, float]


@dataclass(frozen=True)
class Rating:
    """A policy's Elo with its interval ``[low, high]``, comparisons played and mean points per comparison."""

    name: str
    elo: float
    low: float
    high: float
    comparisons: int
    score: float

    def clearly_above(self, other: "Rating") -> bool:
        """Whether the two intervals do not overlap and this one is higher."""
        return self.low > other.high

    def __str__(self) -> str:
        return f"{self.name}: {self.elo:.0f} ± {(self.high - self.low) / 2:.0f} [{self.low:.0f}, {self.high:.0f}] ({self.comparisons} comparisons, score {self.score:.2f})"


class League:
    """Round-robin of named policies (``Opponent`` callables, or ``"random"``/``"scripted"``) in one game."""

    def __init__(self, game: str | Callable[[], Any], policies: Mapping[str, str | Opponent], *,
                 games_per_pair: int = 20, seed: int = 0, game_kwargs: dict[str, Any] | None = None):
        if len(policies) < 2:
            raise ValueError(f"a league needs at least two policies, got {list(policies)}")
        if games_per_pair < 1:
            raise ValueError(f"games_per_pair must be at least 1, got {games_per_pair}")
        self.env = make_multi(game, **(game_kwargs or {})) if isinstance(game, str) else game()
        if len(self.env.possible_agents) != 2:
            raise ValueError(f"the league rates two-player games, got {len(self.env.possible_agents)} players")
        self.game = game if isinstance(game, str) else getattr(game, "__name__", repr(game))
        self.policies = {name: resolve_opponent(p, self.env) for name, p in policies.items()}
        self.games_per_pair, self.seed = games_per_pair, seed

    def play(self) -> "LeagueResult":
        seat_0, seat_1 = self.env.possible_agents
        matches = []
        for a, b in combinations(self.policies, 2):
            for k in range(self.games_per_pair):
                first, second = (a, b) if k % 2 == 0 else (b, a)
                seed = self.seed + k // 2
                record = play_game(self.env, {seat_0: self.policies[first], seat_1: self.policies[second]}, seed=seed)
                matches.append(Match(first, second, seed, (record.returns[seat_0], record.returns[seat_1])))
        return LeagueResult(self.game, list(self.policies), matches)


@dataclass
class LeagueResult:
    game: str
    names: list[str]
    matches: list[Match]

    def comparisons(self, scoring: str = "duplicate") -> list[tuple[str, str, float]]:
        """``(policy, opponent, policy's points)`` per comparison under ``scoring`` (module docstring)."""
        if scoring not in ("duplicate", "game"):
            raise ValueError(f"scoring must be 'duplicate' or 'game', got {scoring!r}")
        totals: dict[tuple, dict[str, float]] = {}
        for k, m in enumerate(self.matches):
            key = (frozenset((m.first, m.second)), m.seed) if scoring == "duplicate" else k
            pair = totals.setdefault(key, {m.first: 0.0, m.second: 0.0})
            pair[m.first] += m.payoffs[0]
            pair[m.second] += m.payoffs[1]
        out = []
        for pair in totals.values():
            (a, pa), (b, pb) = pair.items()
            out.append((a, b, 1.0 if pa > pb else 0.0 if pa < pb else 0.5))
        return out

    def ratings(self, method: str = "laplace", *, scoring: str = "duplicate", level: float = 0.95,
                samples: int = 200, seed: int = 0) -> list[Rating]:
        """Ratings, best first; see the module docstring for the model, scoring and interval methods."""
        if method not in ("laplace", "bootstrap"):
            raise ValueError(f"method must be 'laplace' or 'bootstrap', got {method!r}")
        index = {n: i for i, n in enumerate(self.names)}
        comparisons = self.comparisons(scoring)
        table = np.array([(index[a], index[b], s) for a, b, s in comparisons], dtype=float)  # (C, 3)
        theta, cov = fit_bradley_terry(len(self.names), table)
        centre = np.eye(len(theta)) - 1.0 / len(theta)
        elo = ELO_MEAN + ELO_PER_LOGIT * centre @ theta
        if method == "laplace":
            z = NormalDist().inv_cdf(0.5 + level / 2)
            half = z * ELO_PER_LOGIT * np.sqrt(np.clip(np.diag(centre @ cov @ centre.T), 0.0, None))
            low, high = elo - half, elo + half
        else:
            low, high = _bootstrap(table, len(theta), level, samples, seed)
        out = [Rating(n, float(elo[i]), float(low[i]), float(high[i]), *_record(n, comparisons)) for i, n in enumerate(self.names)]
        return sorted(out, key=lambda r: -r.elo)

    def table(self, method: str = "laplace", scoring: str = "duplicate") -> str:
        """A Markdown table of the ratings."""
        rows = ["| policy | Elo | 95% interval | comparisons | score |", "|---|---:|---|---:|---:|"]
        for r in self.ratings(method, scoring=scoring):
            rows.append(f"| {r.name} | {r.elo:.0f} | [{r.low:.0f}, {r.high:.0f}] | {r.comparisons} | {r.score:.2f} |")
        return "\n".join(rows)

    def mean_payoff(self, name: str) -> float:
        """The policy's mean payoff per game over the whole league (chips for poker, ±1 otherwise)."""
        payoffs = [m.payoffs[0] if m.first == name else m.payoffs[1] for m in self.matches if name in (m.first, m.second)]
        return float(np.mean(payoffs)) if payoffs else 0.0


def _record(name: str, comparisons: list[tuple[str, str, float]]) -> tuple[int, float]:
    points = [s if a == name else 1.0 - s for a, b, s in comparisons if name in (a, b)]
    return len(points), float(np.mean(points)) if points else 0.0


def fit_bradley_terry(n: int, table: np.ndarray, prior_sd: float = PRIOR_SD) -> tuple[np.ndarray, np.ndarray]:
    """MAP strengths ``θ`` (logits) and the posterior covariance (inverse negative Hessian) by Newton's method.

    ``table`` is ``(C, 3)``, one comparison per row: player index, opponent index, the player's points in
    ``[0, 1]``. The log posterior is concave, so Newton converges in a handful of steps.
    """
    i, j, s = table[:, 0].astype(int), table[:, 1].astype(int), table[:, 2]
    diff = np.zeros((len(table), n))  # (C, n): e_i - e_j per comparison
    diff[np.arange(len(table)), i] += 1.0
    diff[np.arange(len(table)), j] -= 1.0
    theta = np.zeros(n)
    precision = np.eye(n) / prior_sd**2
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(diff @ theta)))  # (C,)
        grad = diff.T @ (s - p) - precision @ theta
        hessian = -(diff.T * (p * (1 - p))) @ diff - precision  # (n, n), negative definite
        step = np.linalg.solve(hessian, grad)
        theta = theta - step
        if np.max(np.abs(step)) < 1e-10:
            break
    p = 1.0 / (1.0 + np.exp(-(diff @ theta)))
    hessian = -(diff.T * (p * (1 - p))) @ diff - precision
    return theta, np.linalg.inv(-hessian)


def _bootstrap(table: np.ndarray, n: int, level: float, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the centred Elo over refits on comparisons resampled with replacement."""
    rng = np.random.default_rng(seed)
    centre = np.eye(n) - 1.0 / n
    draws = np.empty((samples, n))  # (B, n)
    for b in range(samples):
        theta, _ = fit_bradley_terry(n, table[rng.integers(len(table), size=len(table))])
        draws[b] = ELO_MEAN + ELO_PER_LOGIT * centre @ theta
    tail = (1.0 - level) / 2
    return np.quantile(draws, tail, axis=0), np.quantile(draws, 1.0 - tail, axis=0)
