"""Bayesian Knowledge Tracing (Corbett & Anderson, 1995), as pure functions.

A component is either known or not. Before any practice it is known with probability ``p_init``; after
each learning opportunity an unknown component becomes known with probability ``p_learn`` (never the
reverse: no forgetting). A student who knows it answers correctly unless they slip (``p_slip``); one who
does not answers correctly only by guessing (``p_guess``).

The simulated students *are* this generative model (with a latent boolean per component, plus
misconceptions); the tracing functions below are what a tutor or scheduler can compute from answers.

>>> params = BKTParams(p_init=0.3, p_learn=0.1, p_guess=0.2, p_slip=0.1)
>>> round(posterior(0.3, True, params), 6)      # 0.3 * 0.9 / (0.3 * 0.9 + 0.7 * 0.2)
0.658537
>>> round(update(0.3, True, params), 6)         # then one learning opportunity
0.692683
>>> round(p_correct(0.3, params), 2)            # 0.3 * 0.9 + 0.7 * 0.2
0.41
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class BKTParams:
    """The four BKT parameters of one component for one student."""

    p_init: float
    """Probability the component is known before any practice."""
    p_learn: float
    """Probability an unknown component becomes known at one learning opportunity."""
    p_guess: float
    """Probability of a correct answer without the skill."""
    p_slip: float
    """Probability of a wrong answer despite the skill."""

    def __post_init__(self) -> None:
        for name in ("p_init", "p_learn", "p_guess", "p_slip"):
            p = getattr(self, name)
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
        if self.p_guess + self.p_slip >= 1.0:
            raise ValueError(
                f"p_guess + p_slip must be < 1 (else a correct answer is evidence against knowing), got "
                f"{self.p_guess} + {self.p_slip}; lower one of them"
            )


#: Population-level defaults: what a tutor or scheduler assumes about a student it does not know yet.
DEFAULT_OPEN = BKTParams(p_init=0.3, p_learn=0.12, p_guess=0.05, p_slip=0.1)
DEFAULT_CHOICE = BKTParams(p_init=0.3, p_learn=0.12, p_guess=0.5, p_slip=0.1)


def p_correct(p_known: float, params: BKTParams) -> float:
    """Probability of a correct answer given P(known)."""
    return p_known * (1.0 - params.p_slip) + (1.0 - p_known) * params.p_guess


def posterior(p_known: float, correct: bool, params: BKTParams) -> float:
    """P(known | this answer), by Bayes' rule."""
    if correct:
        known, unknown = p_known * (1.0 - params.p_slip), (1.0 - p_known) * params.p_guess
    else:
        known, unknown = p_known * params.p_slip, (1.0 - p_known) * (1.0 - params.p_guess)
    total = known + unknown
    return known / total if total > 0 else p_known


def transition(p_known: float, p_learn: float) -> float:
    """P(known) after one learning opportunity."""
    return p_known + (1.0 - p_known) * p_learn


def update(p_known: float, correct: bool, params: BKTParams) -> float:
    """The standard BKT step: condition on the answer, then apply the learning transition."""
    return transition(posterior(p_known, correct, params), params.p_learn)


def trace(answers: Iterable[bool], params: BKTParams) -> list[float]:
    """P(known) before each answer and after the last: ``len(answers) + 1`` values starting at ``p_init``."""
    estimates = [params.p_init]
    for correct in answers:
        estimates.append(update(estimates[-1], correct, params))
    return estimates
