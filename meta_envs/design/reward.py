"""The designer's reward: learnability times skill-dependence times novelty (issue 19, docs/meta_envs.md).

A designer (of a whole env in EnvDesign-v0, or of a task config in TaskDesign-v0) is paid for an
artefact a solver can *learn from*, not for one that is merely valid::

    unparseable action or schema failure      -> -1
    any other failed gate (timeouts included) -> -0.5
    our own sandbox failed (infra)            ->  0     (never blamed on the designer)
    otherwise   r = S * [0.6 * B(p_hat) + 0.4 * R_hint] * (1 - dup)

with

* ``p_hat`` the solver's success over ``n >= 8`` plays;
* ``B`` the learnability plateau (SPADE): 1 on ``[0.4, 0.6]``, falling linearly to 0 over 0.25 on
  each side (0 at ``p_hat <= 0.15`` and at ``p_hat >= 0.85``) -- too easy and too hard earn nothing;
* ``R_hint = clip((p_hint - p_hat) / 0.15, 0, 1)`` the hint regret (SPADE): an env whose hint helps
  the solver has something to learn; 0 when the env has no hint;
* ``S = clip((p_expert_eps - p_random) / 0.5, 0, 1)`` skill-dependence: the expert playing with
  epsilon-random actions must beat a random policy clearly, so a coin-flip game whose p_hat sits at
  0.5 by chance earns nothing (the "bimodal hack" SPADE's own code comments name);
* ``dup`` the near-duplicate share against the archive (R-Zero), from ``meta_envs.design.novelty``.

Every component is returned in the components dict (EnvDesign-v0 and TaskDesign-v0 put it in
``info``). The functions are pure; tests compute the values by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["ok", "unparseable", "schema", "gate", "infra"]

OUTCOME_REWARDS: dict[str, float] = {"unparseable": -1.0, "schema": -1.0, "gate": -0.5, "infra": 0.0}
"""The fixed reward of every outcome other than ``"ok"``."""

PLATEAU_LOW, PLATEAU_HIGH, PLATEAU_FALL = 0.4, 0.6, 0.25
HINT_SCALE = 0.15
SKILL_SCALE = 0.5
WEIGHT_LEARNABLE, WEIGHT_HINT = 0.6, 0.4
MIN_PLAYS = 8
"""The solver plays at least this many seeds before ``p_hat`` is trusted (issue 19: k >= 8)."""


class RewardInputError(ValueError):
    """Reward inputs out of range: a bug in the caller (our machinery), not the designer's outcome."""


@dataclass(frozen=True)
class PlayStats:
    """What the solver and the baselines did on one designed env.

    p_solver: the solver's success share over ``n`` plays (``p_hat``).
    n: how many plays ``p_solver`` (and ``p_hint``) are over; at least ``MIN_PLAYS``.
    p_hint: the solver's success share on the same seeds with the env's hint shown; None: no hint.
    p_expert_eps: the expert's success share with epsilon = 0.25 random legal actions (gates' stats).
    p_random: the uniformly random legal-action policy's success share (gates' stats).
    """

    p_solver: float
    n: int
    p_hint: float | None
    p_expert_eps: float
    p_random: float

    def __post_init__(self) -> None:
        for name in ("p_solver", "p_hint", "p_expert_eps", "p_random"):
            value = getattr(self, name)
            if value is None and name == "p_hint":
                continue
            if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
                raise RewardInputError(f"PlayStats.{name}: expected a share in [0, 1], got {value!r}")
        if not isinstance(self.n, int) or self.n < MIN_PLAYS:
            raise RewardInputError(f"PlayStats.n: expected at least {MIN_PLAYS} plays, got {self.n!r}; "
                                   f"play more seeds before computing the reward")


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def plateau(p: float) -> float:
    """The learnability plateau B(p): 1 on [0.4, 0.6], linear to 0 over 0.25 on each side.

    >>> plateau(0.5), plateau(0.4), plateau(0.275), plateau(0.15), plateau(0.0), plateau(0.725)
    (1.0, 1.0, 0.5, 0.0, 0.0, 0.5)
    """
    distance = max(0.0, PLATEAU_LOW - p, p - PLATEAU_HIGH)
    return round(_clip01(1.0 - distance / PLATEAU_FALL), 12)


def hint_regret(p_hat: float, p_hint: float | None) -> float:
    """R_hint = clip((p_hint - p_hat) / 0.15, 0, 1); 0 for an env without a hint.

    >>> hint_regret(0.5, 0.575), hint_regret(0.5, 0.9), hint_regret(0.5, 0.2), hint_regret(0.5, None)
    (0.5, 1.0, 0.0, 0.0)
    """
    if p_hint is None:
        return 0.0
    return round(_clip01((p_hint - p_hat) / HINT_SCALE), 12)


def skill_dependence(p_expert_eps: float, p_random: float) -> float:
    """S = clip((p_expert_eps - p_random) / 0.5, 0, 1): 0 for a game the expert cannot beat chance in.

    >>> skill_dependence(0.9, 0.0), skill_dependence(0.5, 0.5), skill_dependence(0.45, 0.2)
    (1.0, 0.0, 0.5)
    """
    return round(_clip01((p_expert_eps - p_random) / SKILL_SCALE), 12)


def designer_reward(outcome: Outcome, stats: PlayStats | None = None,
                    dup: float = 0.0) -> tuple[float, dict]:
    """The designer's reward for one designed env or task, and every component of it.

    ``outcome`` is ``"ok"`` (every gate passed; ``stats`` required), ``"unparseable"`` / ``"schema"``
    (-1), ``"gate"`` (-0.5) or ``"infra"`` (0: our sandbox failed). ``dup`` in [0, 1] is the
    near-duplicate share. The components dict is JSON-able: ``outcome``, ``reward``, ``S``, ``B``,
    ``R_hint``, ``dup``, ``p_hat``, ``p_hint``, ``p_expert_eps``, ``p_random``, ``n`` (None where the
    outcome short-circuits the formula).

    >>> designer_reward("ok", PlayStats(0.5, 8, 0.65, 1.0, 0.0), dup=0.5)[0]
    0.5
    >>> designer_reward("gate")[0]
    -0.5
    """
    if not isinstance(dup, (int, float)) or math.isnan(dup) or not 0.0 <= dup <= 1.0:
        raise RewardInputError(f"dup: expected a share in [0, 1], got {dup!r}")
    components: dict = {"outcome": outcome, "S": None, "B": None, "R_hint": None, "dup": float(dup),
                        "p_hat": None, "p_hint": None, "p_expert_eps": None, "p_random": None, "n": None}
    if outcome != "ok":
        if outcome not in OUTCOME_REWARDS:
            raise RewardInputError(f"outcome: expected one of ok, {', '.join(OUTCOME_REWARDS)}; "
                                   f"got {outcome!r}")
        components["reward"] = OUTCOME_REWARDS[outcome]
        return OUTCOME_REWARDS[outcome], components
    if stats is None:
        raise RewardInputError("outcome 'ok': expected PlayStats, got None; play the solver first")
    s = skill_dependence(stats.p_expert_eps, stats.p_random)
    b = plateau(stats.p_solver)
    r_hint = hint_regret(stats.p_solver, stats.p_hint)
    reward = round(s * (WEIGHT_LEARNABLE * b + WEIGHT_HINT * r_hint) * (1.0 - dup), 12)
    components.update(S=s, B=b, R_hint=r_hint, p_hat=float(stats.p_solver), n=stats.n,
                      p_hint=None if stats.p_hint is None else float(stats.p_hint),
                      p_expert_eps=float(stats.p_expert_eps), p_random=float(stats.p_random),
                      reward=reward)
    return reward, components
