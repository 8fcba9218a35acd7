"""Interval estimates and pass@k for leaderboard tables, pure and deterministic.

The rate and mean intervals (``wilson``, ``mean_ci``, ``Z95``) are :mod:`agentgym_envs.stats`'s, re-exported
here; this module adds what only leaderboards need (pass@k, the macro average over families).

>>> round(wilson(8, 10)[0], 3), round(wilson(8, 10)[1], 3)
(0.49, 0.943)
>>> round(pass_at_k(n=5, c=2, k=1), 3), round(pass_at_k(n=5, c=2, k=2), 3)
(0.4, 0.7)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from agentgym_envs.stats import Z95, mean_ci, wilson

__all__ = ["Z95", "macro_rate_ci", "mean_ci", "mean_pass_at_k", "pass_at_k", "wilson"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` attempts of one task, ``c`` of them successful (Chen et al., 2021).

    ``1 - C(n-c, k) / C(n, k)``: the chance that at least one of ``k`` attempts drawn without replacement
    from the ``n`` succeeds; computed as a product so that large ``n`` does not overflow.
    """
    if not 0 < k <= n:
        raise ValueError(f"pass@k needs 0 < k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - float(np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(outcomes: Sequence[Sequence[bool]], k: int) -> float | None:
    """pass@k averaged over tasks, each given as its attempts' outcomes; tasks with fewer than ``k`` are skipped."""
    values = [pass_at_k(len(o), sum(o), k) for o in outcomes if len(o) >= k]
    return float(np.mean(values)) if values else None


def macro_rate_ci(counts: Sequence[tuple[int, int]], z: float = Z95) -> tuple[float, float, float]:
    """Mean over groups of each group's success rate, with an Agresti–Coull interval for that mean.

    ``counts`` holds ``(successes, n)`` per group (env family): each family counts once however many
    episodes it has. Each family's variance uses the Agresti–Coull adjusted rate ``(k + z²/2) / (n + z²)``,
    so a family at 0% or 100% still carries its small-sample uncertainty (a bootstrap would collapse to a
    point there); with one group this is the Agresti–Coull interval. Deterministic.

    >>> point, lo, hi = macro_rate_ci([(10, 10), (0, 10)])
    >>> point, round(lo, 3), round(hi, 3)
    (0.5, 0.371, 0.629)
    """
    kept = [(k, n) for k, n in counts if n > 0]
    if not kept:
        return 0.0, 0.0, 1.0
    point = sum(k / n for k, n in kept) / len(kept)
    variance = 0.0
    for k, n in kept:
        adjusted_n = n + z * z
        p = (k + z * z / 2) / adjusted_n
        variance += p * (1 - p) / adjusted_n
    half = z * math.sqrt(variance) / len(kept)
    return point, max(0.0, point - half), min(1.0, point + half)
