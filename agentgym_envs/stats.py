"""95% intervals for success rates and means: one implementation for baselines, trainer and leaderboards.

Two intervals for a rate, chosen by what the number is for:

* :func:`normal_half_width` — the normal-approximation (Wald) half-width ``z·sqrt(p(1-p)/n)``, shown as
  ``p ± h``. Cheap and symmetric; fine for a progress line or a baseline table, but it collapses to 0 at
  ``p`` = 0 or 1 and is too narrow for small ``n``.
* :func:`wilson` — the Wilson score interval ``(low, high)``: sound at 0, 1 and small ``n``. Use it where
  rates are compared or published (leaderboards).

:func:`mean_ci` is the normal interval of a mean (returns, steps, seconds). All use ``Z95``, the exact
97.5% normal quantile.

>>> round(normal_half_width(0.5, 100), 4)
0.098
>>> tuple(round(x, 3) for x in wilson(8, 10))
(0.49, 0.943)
>>> mean_ci([1.0, 2.0, 3.0])[0]
2.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: The two-sided 95% quantile of the standard normal distribution (``scipy.stats.norm.ppf(0.975)``).
Z95 = 1.959963984540054


def normal_half_width(p: float, n: int, z: float = Z95) -> float:
    """Half-width of the normal-approximation interval of a rate ``p`` measured on ``n`` trials (0 when ``n == 0``)."""
    if n <= 0:
        return 0.0
    return z * math.sqrt(p * (1 - p) / n)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (sound at 0, 1 and small n, unlike the normal one).

    ``(0.0, 1.0)`` when ``n == 0``: no episodes say nothing.
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_ci(values: Sequence[float], z: float = Z95) -> tuple[float, float]:
    """Mean and the half-width of its normal-approximation interval (sample std, ``ddof=1``).

    The half-width is 0 for fewer than two values (one value has no spread to estimate); callers that
    must show "unknown" there check the count themselves.
    """
    if not len(values):
        return 0.0, 0.0
    array = np.asarray(values, dtype=float)
    half = z * float(array.std(ddof=1)) / math.sqrt(len(array)) if len(array) > 1 else 0.0
    return float(array.mean()), half
